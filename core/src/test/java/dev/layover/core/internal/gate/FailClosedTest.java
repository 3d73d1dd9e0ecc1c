package dev.layover.core.internal.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.ChildWorkerMain.Chat;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import dev.layover.core.provider.state.Workers;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * When the provider state cannot be read, the provider is not called: the pick, which reads it,
 * fails and admits nothing; the job waits as it was enqueued, and the error is logged. The error is
 * real: a table of the provider state is renamed away under the running worker.
 */
// alone in the fast profile: it replaces System.err to read what was logged
@Isolated
@DatabaseTest
class FailClosedTest {

    private static final String KEY = "fake:primary";
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final ByteArrayOutputStream log = new ByteArrayOutputStream();
    private PrintStream originalErr;
    private Layover layover;
    private final AtomicInteger calls = new AtomicInteger();

    @BeforeEach
    void captureLog() {
        originalErr = System.err;
        System.setErr(new PrintStream(new Tee(originalErr, log), true, StandardCharsets.UTF_8));
    }

    @AfterEach
    void restore() {
        if (layover != null) {
            layover.stop();
        }
        System.setErr(originalErr);
    }

    private JobType<Chat> start(TestDatabase db) {
        JobType<Chat> chat = JobType.builder("chat", Chat.class)
                .providerKey(KEY)
                .handler((args, ctx) -> {
                    calls.incrementAndGet();
                    return Outcome.done();
                })
                .build();
        layover = Workers.builder(db.dataSource(), "worker-a").register(chat).start();
        return chat;
    }

    private String logged() {
        return log.toString(StandardCharsets.UTF_8);
    }

    @Test
    void aKeyWhoseStateCannotBeReadAdmitsNothingAndItsJobWaitsUntouched(TestDatabase db) {
        JobType<Chat> chat = start(db);
        db.execute("alter table layover.breakers rename to breakers_away");
        String id = layover.enqueue(chat, new Chat("x")).id();
        Await.until(WAIT, "the pick's failure logged", () -> logged().contains("relation \"layover.breakers\" does not exist"));
        Map<String, Object> job = db.row("select * from layover.jobs where id = ?", id);
        assertEquals(0, calls.get(), "fails closed: the pick admitted nothing, the provider was not called");
        assertEquals(0, job.get("attempts"), "no attempt spent");
        assertEquals(0, job.get("reschedules"), "no reschedule either: the job waits as it was enqueued");
        assertEquals(1L, db.count("select version from layover.scheduled_tasks where task_instance = ?", id));

        db.execute("alter table layover.breakers_away rename to breakers");
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(1, calls.get(), "runs once the state is readable again");
    }

    @Test
    void aCooldownTableThatCannotBeReadStopsThePickNotTheWorker(TestDatabase db) {
        JobType<Chat> chat = start(db);
        layover.enqueue(chat, new Chat("warm"));
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        db.execute("alter table layover.cooldowns rename to cooldowns_away");
        String id = layover.enqueue(chat, new Chat("y")).id();
        Await.until(WAIT, "the pick's failure logged", () -> logged().contains("relation \"layover.cooldowns\" does not exist"));
        assertEquals(1, calls.get(), "only the warm-up job ran");
        assertEquals(0L, db.count("select reschedules from layover.scheduled_tasks where task_instance = ?", id));
        db.execute("alter table layover.cooldowns_away rename to cooldowns");
        Await.equal(WAIT, "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(2, calls.get());
    }

    /** Writes to two streams. */
    private static final class Tee extends OutputStream {
        private final OutputStream a;
        private final OutputStream b;

        Tee(OutputStream a, OutputStream b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public synchronized void write(int c) throws java.io.IOException {
            a.write(c);
            b.write(c);
        }

        @Override
        public synchronized void write(byte[] buf, int off, int len) throws java.io.IOException {
            a.write(buf, off, len);
            b.write(buf, off, len);
        }

        @Override
        public void flush() throws java.io.IOException {
            a.flush();
        }
    }
}
