package dev.layover.dlq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.Layover;
import dev.layover.core.UnknownJobTypeException;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A dead letter whose job type is no longer registered is marked, stays parked, and is not replayed. */
@DatabaseTest
class UnregisteredJobTypeTest {

    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    @Test
    void aDeadLetterOfAnUnregisteredTypeIsMarkedStaysParkedAndItsReplayIsRefused(TestDatabase db) {
        layover = Fixtures.layover(db, Fixtures.work()).build();
        DeadLetters store = DeadLetters.create(layover);
        long retired = Fixtures.deadLetter("old-1").type("retired-type").insert(db);
        long current = Fixtures.deadLetter("new-1").insert(db);

        Map<Long, Boolean> marks = new java.util.HashMap<>();
        store.find(DeadLetterFilter.all(), 10).items().forEach(s -> marks.put(s.id(), s.jobTypeRegistered()));
        assertEquals(Map.of(retired, false, current, true), marks);
        assertFalse(store.get(retired).orElseThrow().jobTypeRegistered());
        assertFalse(store.isRegistered("retired-type"));

        UnknownJobTypeException e = assertThrows(UnknownJobTypeException.class,
                () -> store.replay(retired, ReplayOptions.by("alice")));
        assertEquals("retired-type", e.jobType());
        assertTrue(e.getMessage().contains("not registered in this Layover instance"), e.getMessage());
        assertTrue(e.getMessage().contains("stays parked"), e.getMessage());

        BulkResult bulk = store.replay(Selection.matching(DeadLetterFilter.all()), ReplayOptions.by("alice"));
        assertEquals(1, bulk.changed());
        assertEquals(1, bulk.skipped(BulkResult.SkipReason.JOB_TYPE_NOT_REGISTERED));

        assertEquals("parked", db.value("select state from layover.dead_letters where id = ?", retired));
        assertEquals(0, db.count("select count(*) from layover.jobs where job_type = 'retired-type'"));

        assertEquals(1, store.discard(Selection.one(retired), ActionOptions.by("alice")).changed(),
                "it can still be discarded");
    }
}
