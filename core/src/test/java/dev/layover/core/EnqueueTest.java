package dev.layover.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.annotation.JsonIgnore;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.sql.Connection;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Enqueue: when, with which id, in whose transaction, how many at once, and what is refused. */
@DatabaseTest
class EnqueueTest {

    record Email(String to, String subject) {}

    /** A type Jackson can write but the handler must not see mutated. */
    static final class Opaque {
        @JsonIgnore
        public Object self = this;

        public Object getLoop() {
            return this;
        }
    }

    private final Set<String> ran = ConcurrentHashMap.newKeySet();
    private final JobType<Email> email = JobType.builder("email", Email.class)
            .providerKey(e -> "smtp:" + e.to().substring(e.to().indexOf('@') + 1))
            .handler((args, ctx) -> {
                ran.add(ctx.jobId());
                return Outcome.done();
            })
            .build();
    private Layover layover;

    @AfterEach
    void stop() {
        if (layover != null) {
            layover.stop();
        }
    }

    private Layover client(TestDatabase db) {
        layover = TestLayovers.builder(db).register(email).build();
        return layover;
    }

    @Test
    void textPostgresCannotStoreIsRefusedWithAClearErrorNotADatabaseOne(TestDatabase db) {
        JobType<Email> keyed = JobType.builder("keyed-mail", Email.class).providerKey(e -> "mail:" + e.to())
                .handler((a, c) -> Outcome.done()).build();
        Layover layover = Layover.builder(db.dataSource()).register(keyed).build();
        IllegalArgumentException key = assertThrows(IllegalArgumentException.class, () -> EnqueueOptions.key("a\u0000b"));
        assertTrue(key.getMessage().contains("NUL"), key.getMessage());
        assertThrows(IllegalArgumentException.class, () -> EnqueueOptions.key("half \uD800 a pair"));
        InvalidArgsException providerKey = assertThrows(InvalidArgsException.class,
                () -> layover.enqueue(keyed, new Email("nul\u0000@example.com", "hi")));
        assertTrue(providerKey.getMessage().contains("provider key"), providerKey.getMessage());
        IllegalArgumentException by = assertThrows(IllegalArgumentException.class,
                () -> layover.control().pauseJobType("keyed-mail", "eve\u0000", null));
        assertTrue(by.getMessage().contains("NUL"), by.getMessage());
        assertEquals("a reason with \uFFFD in it",
                layover.control().pauseJobType("keyed-mail", "ops", "a reason with \u0000 in it").reason(),
                "a reason keeps its text, the NUL replaced");
        assertEquals(0, db.count("select count(*) from layover.jobs"), "nothing was written");
    }

    @Test
    void anEnqueuedJobIsVisibleInTheJobsView(TestDatabase db) {
        Enqueued e = client(db).enqueue(email, new Email("ada@example.com", "hi"));
        assertTrue(e.created());
        assertEquals("email", e.jobType());
        Map<String, Object> row = db.row("select * from layover.jobs where id = ?", e.id());
        assertEquals("email", row.get("job_type"));
        assertEquals("scheduled", row.get("state"));
        assertEquals(0, row.get("attempts"));
        assertEquals(0, row.get("reschedules"));
        assertEquals("smtp:example.com", row.get("provider_key"));
        assertEquals("{\"to\": \"ada@example.com\", \"subject\": \"hi\"}", row.get("args"));
        assertTrue(Math.abs(Duration.between(Instant.now(), ((Timestamp) row.get("run_at")).toInstant()).toSeconds()) < 5);
    }

    @Test
    void aJobEnqueuedForLaterWaitsUntilThen(TestDatabase db) {
        Instant at = Instant.now().plus(Duration.ofHours(3)).truncatedTo(ChronoUnit.MILLIS);
        Enqueued a = client(db).enqueue(email, new Email("a@x.io", "later"), EnqueueOptions.at(at));
        Enqueued b = layover.enqueue(email, new Email("b@x.io", "delay"), EnqueueOptions.after(Duration.ofMinutes(10)));
        assertEquals(at, ((Timestamp) db.value("select run_at from layover.jobs where id = ?", a.id())).toInstant());
        long delay = Duration.between(Instant.now(), ((Timestamp) db.value("select run_at from layover.jobs where id = ?",
                b.id())).toInstant()).toSeconds();
        assertTrue(delay > 590 && delay <= 600, "delay " + delay);
        layover.start();
        Await.until(Duration.ofSeconds(3), "nothing runs early", () -> true);
        assertTrue(ran.isEmpty());
        assertEquals(2, db.count("select count(*) from layover.jobs"));
    }

    @Test
    void anIdWithoutAKeyIsATimeOrderedUuidSoJobsEnqueuedTogetherShareTheirKeysIndexPages(TestDatabase db) {
        long before = System.currentTimeMillis();
        List<Email> batch = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            batch.add(new Email("b" + i + "@x.io", "batch"));
        }
        List<Enqueued> many = client(db).enqueueBatch(email, batch);
        Enqueued one = layover.enqueue(email, new Email("one@x.io", "single"));
        long after = System.currentTimeMillis();
        List<UUID> ids = new ArrayList<>();
        for (Enqueued e : many) {
            ids.add(UUID.fromString(e.id()));
        }
        ids.add(UUID.fromString(one.id()));
        assertEquals(ids.size(), Set.copyOf(ids).size(), "ids are unique");
        for (UUID id : ids) {
            assertEquals(7, id.version(), id.toString());
            assertEquals(2, id.variant(), id.toString());
            long millis = id.getMostSignificantBits() >>> 16;
            assertTrue(millis >= before - 1_000 && millis <= after + 1_000, id + " carries its enqueue's millisecond");
        }
        // the single job, enqueued after the batch, sorts after it in the primary key (text order)
        assertTrue(many.stream().allMatch(e -> e.id().substring(0, 12).compareTo(one.id().substring(0, 12)) <= 0),
                "time-ordered");
        assertEquals(2_001L, db.count("SELECT count(*) FROM layover.scheduled_tasks WHERE task_instance ~ "
                + "'^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'"));
    }

    @Test
    void anIdempotencyKeyBecomesTheIdAndASecondEnqueueWritesNothing(TestDatabase db) {
        Enqueued first = client(db).enqueue(email, new Email("a@x.io", "one"), EnqueueOptions.key("order-42"));
        Enqueued again = layover.enqueue(email, new Email("a@x.io", "two"), EnqueueOptions.key("order-42"));
        assertEquals("order-42", first.id());
        assertTrue(first.created());
        assertEquals("order-42", again.id());
        assertFalse(again.created());
        assertEquals(1, db.count("select count(*) from layover.jobs"));
        assertEquals("one", db.value("select args->>'subject' from layover.jobs where id = 'order-42'"));
    }

    @Test
    void aKeyWhoseJobIsParkedIsNotEnqueuedAgain(TestDatabase db) {
        JobType<Email> parking = JobType.of("parking", Email.class, (a, c) -> Outcome.park("no such address"));
        layover = TestLayovers.builder(db).register(parking).start();
        layover.enqueue(parking, new Email("a@x.io", "s"), EnqueueOptions.key("k1"));
        Await.equal(Duration.ofSeconds(20), "dead letters", 1L, () -> db.count("select count(*) from layover.dead_letters"));
        Enqueued again = layover.enqueue(parking, new Email("a@x.io", "s"), EnqueueOptions.key("k1"));
        assertFalse(again.created());
        assertEquals(0, db.count("select count(*) from layover.jobs"));
        db.update("update layover.dead_letters set state = 'discarded'");
        assertTrue(layover.enqueue(parking, new Email("a@x.io", "s"), EnqueueOptions.key("k1")).created(),
                "once the dead letter is resolved the key is free again");
    }

    @Test
    void anEnqueueInTheCallersTransactionRolledBackNeverRuns(TestDatabase db) throws Exception {
        client(db).start();
        String id;
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            id = layover.enqueue(c, email, new Email("a@x.io", "rolled back"), EnqueueOptions.now()).id();
            try (var st = c.prepareStatement("select count(*) from layover.jobs where id = ?")) {
                st.setString(1, id);
                try (var rs = st.executeQuery()) {
                    rs.next();
                    assertEquals(1, rs.getInt(1), "visible inside the transaction");
                }
            }
            c.rollback();
        }
        Enqueued committed;
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            committed = layover.enqueue(c, email, new Email("b@x.io", "committed"), EnqueueOptions.now());
            c.commit();
        }
        Await.until(Duration.ofSeconds(20), "the committed job runs", () -> ran.contains(committed.id()));
        assertFalse(ran.contains(id));
        assertEquals(0, db.count("select count(*) from layover.jobs where id = ?", id));
    }

    @Test
    void aBatchOfThousandsIsInsertedAndRun(TestDatabase db) {
        List<Email> many = new ArrayList<>();
        for (int i = 0; i < 12_000; i++) {
            many.add(new Email("u" + i + "@x.io", "batch"));
        }
        List<Enqueued> result = client(db).enqueueBatch(email, many);
        assertEquals(12_000, result.size());
        assertTrue(result.stream().allMatch(Enqueued::created));
        assertEquals(12_000, db.count("select count(*) from layover.jobs"));
        assertEquals("smtp:x.io", db.value("select distinct provider_key from layover.jobs"));
        layover.start();
        Await.equal(Duration.ofSeconds(60), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        assertEquals(12_000, ran.size());
    }

    @Test
    void aBatchWithKeysSkipsTheKeysThatExist(TestDatabase db) {
        client(db).enqueue(email, new Email("k2@x.io", "s"), EnqueueOptions.key("k2"));
        List<Email> batch = List.of(new Email("k1@x.io", "s"), new Email("k2@x.io", "s"), new Email("k1@x.io", "dup"));
        List<Enqueued> result = layover.enqueueBatch(email, batch, e -> EnqueueOptions.key(e.to().substring(0, 2)));
        assertEquals(List.of(true, false, false), result.stream().map(Enqueued::created).toList());
        assertEquals(2, db.count("select count(*) from layover.jobs"));
        assertEquals("s", db.value("select args->>'subject' from layover.jobs where id = 'k1'"));
    }

    @Test
    void aBatchInTheCallersTransactionRollsBackWithIt(TestDatabase db) throws Exception {
        client(db);
        try (Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            layover.enqueueBatch(c, email, List.of(new Email("a@x.io", "s"), new Email("b@x.io", "s")),
                    e -> EnqueueOptions.now());
            c.rollback();
        }
        assertEquals(0, db.count("select count(*) from layover.jobs"));
    }

    @Test
    void anUnregisteredJobTypeIsRefusedAndNothingIsWritten(TestDatabase db) {
        JobType<Email> other = JobType.of("other", Email.class, (a, c) -> Outcome.done());
        var e = assertThrows(UnknownJobTypeException.class, () -> client(db).enqueue(other, new Email("a@x.io", "s")));
        assertTrue(e.getMessage().contains("'other' is not registered"), e.getMessage());
        JobType<Email> impostor = JobType.of("email", Email.class, (a, c) -> Outcome.done());
        assertThrows(UnknownJobTypeException.class, () -> layover.enqueue(impostor, new Email("a@x.io", "s")));
        assertEquals(0, db.count("select count(*) from layover.jobs"));
    }

    @Test
    void nullArgsAreRefused(TestDatabase db) {
        var e = assertThrows(InvalidArgsException.class, () -> client(db).enqueue(email, null));
        assertTrue(e.getMessage().contains("must not be null"), e.getMessage());
        assertEquals(0, db.count("select count(*) from layover.jobs"));
    }

    @Test
    void argsJacksonCannotWriteAreRefused(TestDatabase db) {
        JobType<Opaque> opaque = JobType.of("opaque", Opaque.class, (a, c) -> Outcome.done());
        layover = TestLayovers.builder(db).register(opaque).build();
        var e = assertThrows(InvalidArgsException.class, () -> layover.enqueue(opaque, new Opaque()));
        assertTrue(e.getMessage().contains("Jackson cannot write"), e.getMessage());
        assertEquals(0, db.count("select count(*) from layover.jobs"));
    }

    @Test
    void argsOverTheSizeCapAreRefusedAndJustUnderAreAccepted(TestDatabase db) {
        client(db);
        int overhead = "{\"to\":\"a@x.io\",\"subject\":\"\"}".length();
        String under = "x".repeat(256 * 1024 - overhead);
        assertTrue(layover.enqueue(email, new Email("a@x.io", under)).created());
        var e = assertThrows(InvalidArgsException.class, () -> layover.enqueue(email, new Email("a@x.io", under + "x")));
        assertTrue(e.getMessage().contains("over the cap of 262144 bytes"), e.getMessage());
        assertEquals(1, db.count("select count(*) from layover.jobs"));
        var batch = assertThrows(InvalidArgsException.class,
                () -> layover.enqueueBatch(email, List.of(new Email("ok@x.io", "a"), new Email("a@x.io", under + "x"))));
        assertTrue(batch.getMessage().contains("over the cap"));
        assertEquals(1, db.count("select count(*) from layover.jobs"), "an invalid item writes nothing of its batch");
    }

    @Test
    void theSizeCapIsConfigurable(TestDatabase db) {
        layover = TestLayovers.builder(db).register(email).maxArgsBytes(64).build();
        assertThrows(InvalidArgsException.class, () -> layover.enqueue(email, new Email("a".repeat(60), "s")));
    }
}
