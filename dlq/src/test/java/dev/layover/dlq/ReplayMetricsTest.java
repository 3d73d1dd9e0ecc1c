package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.layover.core.Layover;
import dev.layover.core.metrics.LayoverMetrics;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Replays are counted where they happen, by job type and kind ({@code layover.jobs.replayed}). */
@DatabaseTest
class ReplayMetricsTest {

    /** Counts replays by "job type/kind". */
    static final class Recording implements LayoverMetrics {
        final Map<String, Long> replayed = new ConcurrentHashMap<>();

        @Override
        public void jobsReplayed(String jobType, String kind, long count) {
            replayed.merge(jobType + "/" + kind, count, Long::sum);
        }
    }

    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    @Test
    void manualSweepAndBulkReplaysAreCountedOncePerDeadLetter(TestDatabase db) {
        Recording metrics = new Recording();
        layover = Fixtures.layover(db, Fixtures.work()).metrics(metrics).build();
        DeadLetters store = DeadLetters.create(layover);

        long one = Fixtures.deadLetter("m-1").insert(db);
        store.replay(one, ReplayOptions.by("alice"));
        try {
            store.replay(one, ReplayOptions.by("bob"));
        } catch (ReplayConflictException expected) {
            // already replayed: not counted again
        }
        assertEquals(Map.of("work/manual", 1L), metrics.replayed);

        Fixtures.insertMany(db, 7, "bulk", "test:provider", "provider_unavailable", "parked");
        BulkResult r = store.replay(Selection.matching(DeadLetterFilter.all()), ReplayOptions.by("alice").batchSize(3));
        assertEquals(7, r.changed());
        assertEquals(8L, metrics.replayed.get("work/manual"));

        long swept = Fixtures.deadLetter("s-1").insert(db);
        store.replay(swept, ReplayOptions.by(RecoverySweep.ACTOR).kind(ReplayKind.SWEEP));
        long trial = Fixtures.deadLetter("t-1").insert(db);
        store.replay(trial, ReplayOptions.by(RecoverySweep.ACTOR).kind(ReplayKind.TRIAL));
        assertEquals(Map.of("work/manual", 8L, "work/sweep", 1L, "work/trial", 1L), metrics.replayed);
    }
}
