package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.layover.core.Layover;
import dev.layover.dlq.Fixtures.Work;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Steps and dead letters (docs/steps.md): a replay resumes from the steps the parked run finished;
 * a replay from scratch, or with edited args, runs every step again; a discard drops the steps.
 */
@DatabaseTest
class StepsReplayTest {

    private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    private final List<String> results = new CopyOnWriteArrayList<>();
    private final AtomicBoolean broken = new AtomicBoolean(true);
    private Layover layover;
    private dev.layover.core.JobType<Work> type;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private int call(String step) {
        return calls.computeIfAbsent(step, s -> new AtomicInteger()).incrementAndGet();
    }

    private DeadLetters start(TestDatabase db) {
        type = Fixtures.work(1, (args, ctx) -> {
            String a = ctx.step("first", String.class, () -> "first " + call("first"));
            String b = ctx.step("second", String.class, () -> {
                call("second");
                if (broken.get()) {
                    throw new IllegalStateException("the provider's answer does not parse yet");
                }
                return "second";
            });
            results.add(args.name() + ": " + a + " | " + b);
            return null;
        });
        layover = Fixtures.layover(db, type).build();
        layover.start();
        return DeadLetters.create(layover);
    }

    private long parked(TestDatabase db, DeadLetters store, String name) {
        String id = layover.enqueue(type, new Work(name, 1)).id();
        Await.equal(Fixtures.WAIT, "dead letters of " + id, 1L,
                () -> db.count("select count(*) from layover.dead_letters where job_id = ? and state = 'parked'", id));
        assertEquals("parked", db.value("select job_state from layover.steps where job_id = ? and step = 'first'", id));
        return (Long) db.value("select id from layover.dead_letters where job_id = ?", id);
    }

    @Test
    void aReplayResumesFromTheStepsItsParkedRunFinished(TestDatabase db) {
        DeadLetters store = start(db);
        long dl = parked(db, store, "resume");
        broken.set(false);
        store.replay(dl, ReplayOptions.by("alice"));
        Await.equal(Fixtures.WAIT, "results", 1, results::size);
        assertEquals("resume: first 1 | second", results.get(0), "the first step was not run again");
        assertEquals(1, calls.get("first").get());
        assertEquals(2, calls.get("second").get());
        Await.equal(Fixtures.WAIT, "steps left", 0L, () -> db.count("select count(*) from layover.job_steps"));
    }

    @Test
    void aReplayFromScratchRunsEveryStepAgain(TestDatabase db) {
        DeadLetters store = start(db);
        long dl = parked(db, store, "scratch");
        broken.set(false);
        store.replay(dl, ReplayOptions.by("alice").fromScratch());
        Await.equal(Fixtures.WAIT, "results", 1, results::size);
        assertEquals("scratch: first 2 | second", results.get(0));
    }

    @Test
    void aReplayWithEditedArgsStartsFromScratch(TestDatabase db) {
        DeadLetters store = start(db);
        long dl = parked(db, store, "edited");
        broken.set(false);
        store.replay(dl, ReplayOptions.by("alice").args("{\"name\":\"edited-args\",\"n\":2}"));
        Await.equal(Fixtures.WAIT, "results", 1, results::size);
        assertEquals("edited-args: first 2 | second", results.get(0));
    }

    @Test
    void aDiscardDropsTheSteps(TestDatabase db) {
        DeadLetters store = start(db);
        long dl = parked(db, store, "discarded");
        long other = parked(db, store, "kept");
        assertEquals(2L, db.count("select count(*) from layover.job_steps"));
        BulkResult r = store.discard(Selection.ids(dl), ActionOptions.by("carol"));
        assertEquals(1L, r.changed());
        assertEquals(List.of("kept"), db.rows("select d.args->>'name' as name from layover.job_steps s join "
                + "layover.dead_letters d on d.job_id = s.job_id").stream().map(m -> m.get("name")).toList());
        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", other));
    }
}
