package dev.layover.core.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.kagkarlsson.scheduler.task.Execution;
import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobPolicy;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.spi.Db;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestClock;
import dev.layover.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The pick is the admission ({@code layover.pick}, through {@link Picker}), on a real database with
 * a clock the test moves: for each limit kind, what a key admits is taken and moved in one statement,
 * and a job the key does not admit is not touched. Two pickers on two connection pools stand for two
 * JVMs picking at once.
 */
@DatabaseTest
class PickTest {

    private static final String KEY = "openai:gpt-4o-mini";
    private final TestClock clock = new TestClock(Instant.now().truncatedTo(ChronoUnit.MILLIS));

    /** A job of a tenant, with a token estimate. */
    public record Work(String tenant, int n, long tokens) {}

    private static JobType.Builder<Work> type(String name) {
        return JobType.builder(name, Work.class).providerKey(KEY).handler((w, ctx) -> Outcome.done());
    }

    /** An instance that enqueues and runs nothing; the limits are written as a worker writes them at start. */
    private Layover client(TestDatabase db, Function<TestDatabase, TestDatabase> limits, JobType<?>... types) {
        Layover.Builder b = Layover.builder(db.newDataSource(4)).workerName("client").clock(clock);
        for (JobType<?> t : types) {
            b.register(t);
        }
        limits.apply(db);
        return b.build();
    }

    private static Function<TestDatabase, TestDatabase> bucket(String key, Double rpm, Double tpm, Double itpm, int burstMs) {
        return db -> {
            db.update("insert into layover.buckets (provider_key, requests_per_minute, tokens_per_minute, "
                    + "input_tokens_per_minute, burst_ms, token_burst_ms) values (?, ?, ?, ?, ?, 60000)",
                    key, rpm, tpm, itpm, burstMs);
            return db;
        };
    }

    private static Function<TestDatabase, TestDatabase> concurrency(String key, int max) {
        return db -> {
            db.value("select layover.configure_concurrency(?, ?, 'test')::text", key, max);
            return db;
        };
    }

    private Picker picker(DataSource ds, String name, String... types) {
        Map<String, Double> deferral = new HashMap<>();
        for (String t : types) {
            deferral.put(t, 3600.0);
        }
        return picker(ds, name, deferral, types);
    }

    private Picker picker(DataSource ds, String name, Map<String, Double> deferral, String... types) {
        return new Picker(new Db(ds), name, clock, () -> List.of(types),
                Picker.options(40, 60, 0.1, true, false, deferral));
    }

    private static List<Work> work(String tenant, int n) {
        List<Work> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(new Work(tenant, i, 0));
        }
        return out;
    }

    /** The job rows of a key: their versions, run times and reschedules summed (what a write would change). */
    private static String untouched(TestDatabase db) {
        return String.valueOf(db.value("select coalesce(sum(version), 0) || '/' || coalesce(sum(reschedules), 0) || '/' "
                + "|| coalesce(max(execution_time)::text, '') || '/' || count(*) filter (where xmax <> 0) "
                + "from layover.scheduled_tasks where not picked"));
    }

    @Test
    void aBucketAdmitsAsManyAsItHasPermitsAndTheRestStayAsTheyWere(TestDatabase db) {
        JobType<Work> t = type("chat").build();
        Layover c = client(db, bucket(KEY, 600.0, null, null, 1000), t);
        c.enqueueBatch(t, work("a", 50));
        Picker p = picker(db.dataSource(), "w1", "chat");

        assertEquals(10, p.pick(100, false).size(), "the bucket's capacity: 10/s x 1 s");
        String waiting = untouched(db);
        assertEquals(40L, db.count("select count(*) from layover.scheduled_tasks where not picked"));
        assertEquals(0, p.pick(100, false).size(), "nothing free: nothing taken");
        assertEquals(waiting, untouched(db), "the waiting jobs were not written, nor locked");
        Instant tat = ((Timestamp) db.value("select request_tat from layover.buckets where provider_key = ?", KEY)).toInstant();
        assertEquals(clock.instant().plusSeconds(1), tat, "ten permits of 100 ms each");

        clock.advance(Duration.ofMillis(500));
        assertEquals(5, p.pick(100, false).size(), "half a second: five more");
        assertEquals(0L, db.count("select coalesce(max(reschedules), 0) from layover.scheduled_tasks"));
    }

    /**
     * Interactive first, nothing wasted: while a key's interactive calls arrive (its interactive_at
     * within the window), the pick and a background take leave the share free; an interactive take
     * is not limited by it; one window after the last interactive call the pick takes everything.
     */
    @Test
    void whileInteractiveCallsArriveThePickLeavesTheirShareAndTakesItBackAfterTheWindow(TestDatabase db) {
        JobType<Work> t = type("chat").build();
        Layover c = client(db, bucket(KEY, 600.0, null, null, 1000), t);
        c.enqueueBatch(t, work("a", 50));
        Picker p = picker(db.dataSource(), "w1", "chat");
        Timestamp now = Timestamp.from(clock.instant());
        assertEquals(true, db.value("select taken from layover.take(?, ?, '{0,0,0}', true, 0.25, 1)", KEY, now),
                "an interactive call takes one permit and stamps the key");
        assertEquals(now.toInstant(), ((Timestamp) db.value(
                "select interactive_at from layover.buckets where provider_key = ?", KEY)).toInstant());

        assertEquals(6, p.pick(100, false).size(), "10 permits, one taken, 2.5 left for interactive calls: 6");
        assertEquals(false, db.value("select taken from layover.take(?, ?, '{0,0,0}', false, 0.25, 1)", KEY, now),
                "a background take (a job's fallback endpoint) leaves the share too");
        for (int i = 0; i < 3; i++) {
            assertEquals(true, db.value("select taken from layover.take(?, ?, '{0,0,0}', true, 0.25, 1)", KEY, now),
                    "interactive takes are not limited by the share: " + i);
        }
        assertEquals(false, db.value("select taken from layover.take(?, ?, '{0,0,0}', true, 0.25, 1)", KEY, now),
                "but by the bucket");

        clock.advance(Duration.ofMillis(500));
        assertEquals(2, p.pick(100, false).size(), "5 drained: 5 free, 2.5 of them kept");
        clock.advance(Duration.ofMillis(1000));
        assertEquals(10, p.pick(100, false).size(),
                "1.5 s after the last interactive call: the whole bucket is background's again");
        assertEquals(0.0, ((Number) db.value("select layover.interactive_reserve(?, ?, 0.25, 1)", now,
                Timestamp.from(clock.instant()))).doubleValue());
        assertEquals(0.25, ((Number) db.value("select layover.interactive_reserve(?, ?, 0.25, 1)", now, now))
                .doubleValue());
        assertEquals(0.0, ((Number) db.value("select layover.interactive_reserve(null, ?, 0.25, 1)", now))
                .doubleValue(), "a key no interactive call ever asked for");
    }

    /** layover.jobs says why a job the share kept for interactive calls holds back waits (the default share and window). */
    @Test
    void aJobHeldBackByTheInteractiveShareWaitsForRateLimitAndSaysWhy(TestDatabase db) {
        JobType<Work> t = type("chat").build();
        Layover c = client(db, bucket(KEY, 600.0, null, null, 1000), t);
        c.enqueueBatch(t, work("a", 1));
        // 8.5 of the 10 permits spent, an interactive call just now: 1.5 free, 2.5 kept for interactive calls
        db.update("update layover.buckets set interactive_at = now(), request_tat = now() + interval '850 milliseconds' "
                + "where provider_key = ?", KEY);
        Map<String, Object> job = db.row("select waiting_for, waiting_detail from layover.jobs");
        assertEquals("rate_limit", job.get("waiting_for"), job.toString());
        assertTrue(String.valueOf(job.get("waiting_detail")).contains("kept for interactive calls"), job.toString());
        db.update("update layover.buckets set interactive_at = now() - interval '5 seconds' where provider_key = ?", KEY);
        assertEquals(null, db.value("select waiting_for from layover.jobs"), "the share lapsed: the key admits it");
    }

    @Test
    void aKeyCoolingDownWithTenThousandDueJobsWritesNoneOfThem(TestDatabase db) {
        JobType<Work> t = type("chat").build();
        Layover c = client(db, d -> d, t);
        c.enqueueBatch(t, work("a", 10_000));
        db.update("insert into layover.cooldowns (provider_key, until, reason, started_at, updated_at) values (?, ?, 'rate_limited', ?, ?)",
                KEY, Timestamp.from(clock.instant().plusSeconds(30)), Timestamp.from(clock.instant()),
                Timestamp.from(clock.instant()));
        db.execute("vacuum (freeze) layover.scheduled_tasks");
        String before = untouched(db);
        long xmin = db.count("select count(distinct xmin::text) from layover.scheduled_tasks");
        Picker p = picker(db.dataSource(), "w1", "chat");
        for (int i = 0; i < 5; i++) {
            assertEquals(0, p.pick(1000, false).size(), "a key cooling down admits none");
            clock.advance(Duration.ofSeconds(1));
        }
        assertEquals(before, untouched(db), "no row was written or locked");
        assertEquals(xmin, db.count("select count(distinct xmin::text) from layover.scheduled_tasks"));

        clock.advance(Duration.ofSeconds(30));
        assertEquals(1000, p.pick(1000, false).size(), "the cooldown over, the key admits them again");
    }

    @Test
    void twoPickersNeverAdmitMoreThanTheBucketHasTogether(TestDatabase db) throws Exception {
        JobType<Work> t = type("chat").build();
        Layover c = client(db, bucket(KEY, 1200.0, null, null, 1000), t);
        c.enqueueBatch(t, work("a", 500));
        int admitted = race(db, 2, 10, p -> p.pick(50, false).size());
        assertEquals(20, admitted, "the capacity of 20, however two pickers met");
    }

    @Test
    void twoPickersNeverHoldMoreConcurrencySlotsThanTheLimitAndADeadHeartbeatFreesOne(TestDatabase db) throws Exception {
        JobType<Work> t = type("chat").build();
        Layover c = client(db, concurrency(KEY, 3), t);
        c.enqueueBatch(t, work("a", 100));
        int admitted = race(db, 2, 10, p -> p.pick(50, false).size());
        assertEquals(3, admitted, "three slots, however two pickers met");
        assertEquals(3L, (Long) db.value("select in_flight from layover.concurrency where limit_key = ?", KEY));

        db.update("update layover.scheduled_tasks set last_heartbeat = ? where picked and task_instance = "
                + "(select min(task_instance) from layover.scheduled_tasks where picked)",
                Timestamp.from(clock.instant().minusSeconds(41)));
        assertEquals(1, picker(db.dataSource(), "w3", "chat").pick(50, false).size(),
                "a job whose worker died holds no slot");
    }

    @Test
    void twoPickersNeverReserveMoreTokensThanTheBucketHas(TestDatabase db) throws Exception {
        JobType<Work> t = type("chat").tokenEstimate(w -> TokenEstimate.of(w.tokens() / 2, w.tokens() / 2)).build();
        Layover c = client(db, bucket(KEY, null, 6000.0, null, 1000), t); // capacity 6,000
        List<Work> jobs = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            jobs.add(new Work("a", i, 1000));
        }
        c.enqueueBatch(t, jobs);
        int admitted = race(db, 2, 10, p -> p.pick(50, false).size());
        assertEquals(6, admitted, "6,000 tokens free: six jobs of 1,000");
        double tat = ((Number) db.value("select extract(epoch from token_tat - ?::timestamptz) from layover.buckets",
                Timestamp.from(clock.instant()))).doubleValue();
        assertEquals(60.0, tat, 0.01, "6,000 tokens reserved at 100/s: the bucket is full for a minute");
    }

    @Test
    void aJobWhoseEstimateTheKeyCanNeverAdmitIsTakenToBeParkedAndDoesNotHoldTheOthersBack(TestDatabase db) {
        JobType<Work> t = type("chat").tokenEstimate(w -> TokenEstimate.of(w.tokens(), 0)).build();
        Layover c = client(db, bucket(KEY, null, null, 600.0, 1000), t); // capacity 600
        c.enqueue(t, new Work("a", 0, 5000), EnqueueOptions.now());
        c.enqueue(t, new Work("a", 1, 100), EnqueueOptions.now());
        Picker p = picker(db.dataSource(), "w1", "chat");
        List<Execution> picked = p.pick(10, false);
        assertEquals(2, picked.size());
        Map<String, String> verdicts = new HashMap<>();
        for (Execution e : picked) {
            verdicts.put(e.taskInstance.getId(), p.verdict(e.taskInstance.getTaskName(), e.taskInstance.getId(), e.version).kind());
        }
        assertTrue(verdicts.containsValue("too_large"), verdicts.toString());
        assertTrue(verdicts.containsValue("run"), "the job behind it is admitted: " + verdicts);
    }

    @Test
    void anOpenBreakerTakesItsDueJobsToBeParkedAndAnOpenPeriodOverAdmitsOneTrial(TestDatabase db) {
        JobType<Work> t = type("chat").build();
        Layover c = client(db, d -> d, t);
        c.enqueueBatch(t, work("a", 5));
        db.update("insert into layover.breakers (provider_key, state, open_until) values (?, 'open', ?)",
                KEY, Timestamp.from(clock.instant().plusSeconds(30)));
        Picker p = picker(db.dataSource(), "w1", "chat");
        List<Execution> parked = p.pick(2, false);
        assertEquals(2, parked.size());
        for (Execution e : parked) {
            Picker.Verdict v = p.verdict("chat", e.taskInstance.getId(), e.version);
            assertEquals("breaker_open", v.kind());
            assertTrue(v.detail().contains("is open until"), v.detail());
        }

        clock.advance(Duration.ofSeconds(31));
        Picker other = picker(db.dataSource(), "w2", "chat");
        List<Execution> trial = p.pick(10, false);
        assertEquals(1, trial.size(), "one trial call");
        Picker.Verdict v = p.verdict("chat", trial.get(0).taskInstance.getId(), trial.get(0).version);
        assertEquals("trial", v.kind());
        assertNotNull(v.trialToken());
        assertEquals(v.trialToken(), db.value("select trial_token from layover.breakers"));
        assertEquals(0, other.pick(10, false).size(), "the trial is out: no other worker admits");
    }

    @Test
    void aJobDueLongerThanItsMaxDeferralIsTakenToBeParkedTheOthersWait(TestDatabase db) {
        JobType<Work> t = type("chat").policy(JobPolicy.defaults().withMaxDeferral(Duration.ofMinutes(10))).build();
        Layover c = client(db, bucket(KEY, 1.0, null, null, 60000), t);
        c.enqueue(t, new Work("a", 0, 0), EnqueueOptions.now());
        c.enqueue(t, new Work("a", 1, 0), EnqueueOptions.now());
        c.enqueue(t, new Work("a", 2, 0), EnqueueOptions.now());
        Picker p = picker(db.dataSource(), "w1", Map.of("chat", 600.0), "chat");
        assertEquals(1, p.pick(10, false).size(), "one permit a minute");
        clock.advance(Duration.ofSeconds(30));
        assertEquals(0, p.pick(10, false).size());
        clock.advance(Duration.ofMinutes(10));
        List<Execution> late = p.pick(1, false);
        assertEquals(1, late.size(), "the permit of the 11th minute");
        assertEquals("run", p.verdict("chat", late.get(0).taskInstance.getId(), late.get(0).version).kind());
        List<Execution> expired = p.pick(10, false);
        assertEquals(1, expired.size(), "the last job waited past its maxDeferral");
        Picker.Verdict v = p.verdict("chat", expired.get(0).taskInstance.getId(), expired.get(0).version);
        assertEquals("deferral", v.kind());
        assertTrue(v.detail().contains("not admitted by " + KEY), v.detail());
    }

    @Test
    void aFairQueueAdmitsItsTenantsInTurnWhateverTheOrderTheyCameIn(TestDatabase db) {
        JobType<Work> t = type("fair").fairnessKey(w -> "tenant:" + w.tenant()).build();
        Layover c = client(db, bucket(KEY, 360.0, null, null, 1000), t);
        List<Work> all = work("big", 60);
        all.addAll(work("small", 3));
        all.addAll(work("medium", 10));
        c.enqueueBatch(t, all);
        Picker p = picker(db.dataSource(), "w1", "fair");
        List<String> order = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            for (Execution e : p.pick(20, false)) {
                order.add((String) db.value("select fairness_key from layover.scheduled_tasks where task_instance = ?",
                        e.taskInstance.getId()));
            }
            clock.advance(Duration.ofSeconds(1));
        }
        assertEquals(12, order.size());
        assertEquals(3L, order.stream().filter("tenant:small"::equals).count(), "the small tenant is served at once: " + order);
        assertTrue(order.stream().filter("tenant:big"::equals).count() <= 5, "the big backlog takes its share only: " + order);
        String clocks = String.valueOf(db.value("select class_clocks::text from layover.fair_lines where provider_key = ?", KEY));
        assertTrue(clocks.contains("\"0\""), "the priority's clock moved: " + clocks);
    }

    @Test
    void aTenantsConcurrencyLimitAdmitsWithTheProviderKeysAndTakesNothingForTheJobsItRefuses(TestDatabase db) {
        JobType<Work> t = type("chat").limitKeys(w -> List.of("tenant:" + w.tenant())).build();
        Layover c = client(db, bucket(KEY, 6000.0, null, null, 1000).andThen(concurrency("tenant:*", 1)), t);
        c.enqueueBatch(t, work("a", 5));
        c.enqueueBatch(t, work("b", 5));
        Picker p = picker(db.dataSource(), "w1", "chat");
        List<Execution> picked = p.pick(50, false);
        assertEquals(2, picked.size(), "one of each tenant");
        double permits = ((Number) db.value("select extract(epoch from request_tat - ?::timestamptz) * 100 from layover.buckets "
                + "where provider_key = ?", Timestamp.from(clock.instant()), KEY)).doubleValue();
        assertEquals(2.0, permits, 1e-6, "the provider key's bucket gave two permits, none for the refused jobs");
        assertEquals(1L, db.count("select count(*) from layover.concurrency_limits where limit_key = 'tenant:a'"),
                "the pattern's row for the tenant met");
        assertEquals(0, p.pick(50, false).size(), "each tenant's slot is held");
    }

    @Test
    void aTenantAtItsLimitDoesNotHoldBackTheTenantsQueuedBehindIt(TestDatabase db) {
        JobType<Work> t = type("chat").limitKeys(w -> List.of("tenant:" + w.tenant())).build();
        Layover c = client(db, concurrency(KEY, 3).andThen(concurrency("tenant:*", 1)), t);
        c.enqueueBatch(t, work("a", 300)); // first: the head of the key's queue, far deeper than a pick reads
        c.enqueueBatch(t, work("b", 1));
        c.enqueueBatch(t, work("c", 1));
        Picker p = picker(db.dataSource(), "w1", "chat");
        List<String> tenants = new ArrayList<>();
        for (int i = 0; i < 3 && tenants.size() < 3; i++) { // a tenant found full is passed over from the next pick on
            for (Execution e : p.pick(10, false)) {
                tenants.add((String) db.value("select limit_keys[1] from layover.scheduled_tasks where task_instance = ?",
                        e.taskInstance.getId()));
            }
        }
        java.util.Collections.sort(tenants);
        assertEquals(List.of("tenant:a", "tenant:b", "tenant:c"), tenants,
                "one of each tenant, the key's three slots: a's waiting jobs took none of them");
        assertEquals(0, p.pick(10, false).size(), "every slot held");
    }

    @Test
    void jobsWithoutAProviderKeyAreAdmittedByTheirLimitKeysAlone(TestDatabase db) {
        JobType<Work> t = JobType.builder("export", Work.class).limitKeys(w -> List.of("tenant:" + w.tenant()))
                .handler((w, ctx) -> Outcome.done()).build();
        Layover c = client(db, concurrency("tenant:*", 2), t);
        c.enqueueBatch(t, work("a", 5));
        c.enqueueBatch(t, work("b", 5));
        Picker p = picker(db.dataSource(), "w1", "export");
        assertEquals(4, p.pick(50, false).size(), "two of each tenant");
        assertEquals(2L, db.count("select count(*) from layover.scheduled_tasks where picked and limit_keys = '{tenant:a}'"));
        assertEquals(0, p.pick(50, false).size(), "each tenant's two slots are held");
        db.update("delete from layover.scheduled_tasks where picked and limit_keys = '{tenant:a}'"); // a's two finished
        assertEquals(2, p.pick(50, false).size(), "a's next two");
    }

    @Test
    void keysTakeTurnsSoABusyKeyDoesNotStarveTheOthers(TestDatabase db) {
        JobType<Work> t = JobType.builder("chat", Work.class).providerKey(w -> "key:" + w.tenant())
                .handler((w, ctx) -> Outcome.done()).build();
        Layover c = client(db, d -> d, t);
        c.enqueueBatch(t, work("busy", 1000)); // enqueued first: first come, first served would take it whole
        for (int k = 0; k < 20; k++) {
            c.enqueueBatch(t, work(String.format("small%02d", k), 1));
        }
        Picker p = picker(db.dataSource(), "w1", "chat");
        java.util.Set<String> keys = new java.util.HashSet<>();
        int picked = 0;
        for (int i = 0; i < 5; i++) {
            for (Execution e : p.pick(20, false)) {
                picked++;
                keys.add((String) db.value("select provider_key from layover.scheduled_tasks where task_instance = ?",
                        e.taskInstance.getId()));
            }
        }
        assertEquals(100, picked, "five full picks");
        assertEquals(21, keys.size(), "every small key was picked within the first 100 jobs, beside the busy one: " + keys);
    }

    @Test
    void keysWhoseJobsAreAllLaterDoNotHideADueJobBehindThem(TestDatabase db) {
        JobType<Work> t = JobType.builder("chat", Work.class).providerKey(w -> w.tenant())
                .handler((w, ctx) -> Outcome.done()).build();
        Layover c = client(db, d -> d, t);
        // 600 keys sorted before the due one, each with a job due tomorrow: more than one pick walks
        for (int k = 0; k < 600; k++) {
            c.enqueue(t, new Work(String.format("a:%04d", k), 0, 0), EnqueueOptions.after(Duration.ofDays(1)));
        }
        c.enqueue(t, new Work("z:due", 0, 0));
        Picker p = picker(db.dataSource(), "w1", "chat");
        List<String> picked = new ArrayList<>();
        for (int i = 0; i < 3 && picked.isEmpty(); i++) {
            p.pick(8, false).forEach(e -> picked.add(e.taskInstance.getId()));
        }
        assertEquals(1, picked.size(), "the due job was picked within three picks");
        assertEquals("z:due", db.value("select provider_key from layover.scheduled_tasks where task_instance = ?",
                picked.get(0)));
    }

    @Test
    void keysCoolingDownDoNotHideTheKeysBehindThem(TestDatabase db) {
        JobType<Work> t = JobType.builder("chat", Work.class).providerKey(w -> w.tenant())
                .handler((w, ctx) -> Outcome.done()).build();
        Layover c = client(db, d -> d, t);
        for (int k = 0; k < 100; k++) { // more keys than one pick reads, all due, all cooling down
            String key = String.format("a:%04d", k);
            c.enqueueBatch(t, List.of(new Work(key, 0, 0), new Work(key, 1, 0)));
            db.update("insert into layover.cooldowns (provider_key, until, reason, started_at, updated_at) "
                    + "values (?, ?, 'rate_limited', ?, ?)", key, Timestamp.from(clock.instant().plusSeconds(600)),
                    Timestamp.from(clock.instant()), Timestamp.from(clock.instant()));
        }
        c.enqueue(t, new Work("z:ready", 0, 0));
        Picker p = picker(db.dataSource(), "w1", "chat");
        assertEquals(0, p.pick(8, false).size(), "the first pick reads cooling keys only");
        List<Execution> second = p.pick(8, false);
        assertEquals(1, second.size(), "the next pick starts past the keys the first one read");
        assertEquals("z:ready", db.value("select provider_key from layover.scheduled_tasks where task_instance = ?",
                second.get(0).taskInstance.getId()));
    }

    /** Runs {@code rounds} of {@code pickers} pickers (each on a pool of its own) at once; returns the jobs they took. */
    private int race(TestDatabase db, int pickers, int rounds, java.util.function.ToIntFunction<Picker> pick)
            throws Exception {
        List<Picker> ps = new ArrayList<>();
        for (int i = 0; i < pickers; i++) {
            ps.add(picker(db.newDataSource(2), "w" + i, "chat"));
        }
        ExecutorService pool = Executors.newFixedThreadPool(pickers);
        ConcurrentLinkedQueue<Integer> taken = new ConcurrentLinkedQueue<>();
        try {
            for (int r = 0; r < rounds; r++) {
                CyclicBarrier start = new CyclicBarrier(pickers);
                List<Future<?>> fs = new ArrayList<>();
                for (Picker p : ps) {
                    fs.add(pool.submit(() -> {
                        start.await();
                        taken.add(pick.applyAsInt(p));
                        return null;
                    }));
                }
                for (Future<?> f : fs) {
                    f.get();
                }
            }
        } finally {
            pool.shutdown();
        }
        return taken.stream().mapToInt(Integer::intValue).sum();
    }
}
