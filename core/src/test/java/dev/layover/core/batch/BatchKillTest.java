package dev.layover.core.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.testing.Await;
import dev.layover.testing.JvmProcess;
import dev.layover.testing.ProcessTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeBatches;
import dev.layover.testing.provider.FakeProvider;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A worker JVM killed (SIGKILL) while the provider holds the reply to its batch create: the batch
 * exists at the provider, Layover never learnt its id. The survivor takes the batch over after the
 * lease, finds it by its reference and rejoins it: no job lost, none submitted or charged twice.
 */
@ProcessTest
class BatchKillTest {

    private static final Duration WAIT = Duration.ofSeconds(90);

    private final FakeProvider fake = FakeProvider.start();
    private JvmProcess child;
    private Layover survivor;

    @AfterEach
    void stop() {
        if (child != null) {
            child.close();
        }
        if (survivor != null) {
            survivor.stop();
        }
        fake.batches().releaseCreate();
        fake.close();
    }

    @Test
    void theSurvivorRejoinsTheBatchAKilledWorkerWasSubmitting(TestDatabase db) {
        FakeBatches fb = fake.batches().holdCreate();
        Map<String, String> answers = new ConcurrentHashMap<>();
        AtomicInteger direct = new AtomicInteger();
        JobType<BatchWorkerMain.Doc> type = BatchWorkerMain.summaryType(answers::put, direct::incrementAndGet);
        Layover enqueueOnly = Layover.builder(db.dataSource()).register(type).build();
        for (int i = 0; i < 20; i++) {
            enqueueOnly.enqueue(type, new BatchWorkerMain.Doc("d" + i, "document " + i),
                    EnqueueOptions.key("d" + i).withDeadline(Duration.ofHours(2)));
        }
        child = JvmProcess.start(BatchWorkerMain.class, "batch-worker", db.jdbcUrl(), fake.baseUri().toString(), "batch-worker");
        child.awaitOutput("started batch-worker", WAIT);
        Await.until(WAIT, "the child's create held by the provider", () -> fb.heldCreates() == 1);
        assertEquals(1, fb.created(), "the provider made the batch");
        child.kill();
        assertEquals("submitting", db.value("select state from layover.batch_status"), "Layover never learnt its id");

        survivor = Layover.builder(db.dataSource()).register(type).batching("openai:*",
                BatchWorkerMain.settings(fake.baseUri().toString())).threads(2).pollInterval(Duration.ofMillis(50)).start();
        Await.until(WAIT, "every job done", () -> db.count(
                "select count(*) from layover.scheduled_tasks where task_name = 'summary'") == 0);
        fb.releaseCreate();

        assertEquals(1, fb.created(), "the survivor rejoined instead of creating a second batch");
        assertEquals(0, fb.chargedMoreThanOnce(), "no line charged twice");
        assertEquals(20, answers.size(), "every job answered by its line, in the survivor");
        assertEquals(0, direct.get(), "no job called directly");
        assertFalse(child.output().contains("answered"), "the killed worker applied nothing");
        assertEquals(20L, db.count("select count(distinct job_id) from layover.job_history where job_type = 'summary'"));
        assertEquals(20L, db.count("select count(*) from layover.job_history where job_type = 'summary'"), "each once");
        assertEquals(2, ((Number) db.value("select submit_attempts from layover.batch_status")).intValue(),
                "one interrupted attempt, then the rejoin");
    }
}
