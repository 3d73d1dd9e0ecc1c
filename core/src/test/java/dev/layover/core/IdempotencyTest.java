package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * An idempotency key is honoured against finished jobs too (within the history's retention), and a
 * caller can look a key up: queued, running, parked, cancelled, or completed with what the handler
 * returned.
 */
@DatabaseTest
class IdempotencyTest {

    record Charge(String order, int cents) {}

    record Receipt(String order, String reference) {}

    private static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void aKeyWhoseJobCompletedIsNotRunAgainAndItsResultCanBeLookedUp(TestDatabase db) throws Exception {
        AtomicInteger runs = new AtomicInteger();
        JobType<Charge> charge = JobType.of("charge", Charge.class, (a, c) -> {
            runs.incrementAndGet();
            return Outcome.done(new Receipt(a.order(), "ch_" + a.order()));
        });
        try (Layover layover = Layover.builder(db.dataSource()).register(charge).pollInterval(Duration.ofMillis(100))
                .start()) {
            assertTrue(layover.enqueue(charge, new Charge("o-1", 500), EnqueueOptions.key("charge:o-1")).created());
            Await.until(WAIT, "completed", () -> layover.lookup("charge", "charge:o-1")
                    .map(s -> s.state() == JobStatus.State.COMPLETED).orElse(false));
            JobStatus done = layover.lookup("charge", "charge:o-1").orElseThrow();
            assertEquals(new Receipt("o-1", "ch_o-1"),
                    new com.fasterxml.jackson.databind.ObjectMapper().readValue(done.resultJson(), Receipt.class));
            assertTrue(done.finishedAt() != null);

            Enqueued again = layover.enqueue(charge, new Charge("o-1", 500), EnqueueOptions.key("charge:o-1"));
            assertFalse(again.created(), "the key of a completed job is taken");
            layover.awaitCompletions(WAIT);
            assertEquals(1, runs.get(), "a minute later, the same key does not run again");
            assertEquals(0, db.count("select count(*) from layover.jobs"));
        }
    }

    @Test
    void aLookupTellsQueuedParkedAndCancelledApart(TestDatabase db) {
        JobType<Charge> refused = JobType.of("refused", Charge.class, (a, c) -> Outcome.rejected("card declined"));
        try (Layover layover = Layover.builder(db.dataSource()).register(refused).pollInterval(Duration.ofMillis(100))
                .build()) {
            layover.enqueue(refused, new Charge("later", 1), EnqueueOptions.key("k-later").withDelay(Duration.ofHours(1)));
            layover.enqueue(refused, new Charge("cancel", 1), EnqueueOptions.key("k-cancel").withDelay(Duration.ofHours(1)));
            layover.enqueue(refused, new Charge("now", 1), EnqueueOptions.key("k-now"));
            assertEquals(JobStatus.State.SCHEDULED, layover.lookup("refused", "k-later").orElseThrow().state());
            assertTrue(layover.lookup("refused", "k-later").orElseThrow().runAt() != null);
            layover.control().cancel("refused", "k-cancel", "ops", "customer left");
            assertEquals(JobStatus.State.CANCELLED, layover.lookup("refused", "k-cancel").orElseThrow().state());
            layover.start();
            Await.until(WAIT, "parked", () -> layover.lookup("refused", "k-now")
                    .map(s -> s.state() == JobStatus.State.PARKED).orElse(false));
            JobStatus parked = layover.lookup("refused", "k-now").orElseThrow();
            assertEquals("rejected", parked.failureType());
            assertTrue(parked.deadLetterId() != null);
            assertNull(parked.resultJson());
            assertTrue(layover.lookup("refused", "never-enqueued").isEmpty());
            assertFalse(layover.enqueue(refused, new Charge("now", 1), EnqueueOptions.key("k-now")).created(),
                    "a parked job's key is taken until its dead letter is resolved");
        }
    }
}
