package dev.layover.core.internal.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.spi.Db;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.ChildWorkerMain.Chat;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import dev.layover.testing.provider.FakeProvider;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.layover.core.internal.gate.Admission;
import dev.layover.core.internal.gate.ProviderGate;
import dev.layover.core.provider.state.FakeChat;
import dev.layover.core.provider.state.Workers;
import dev.layover.core.provider.state.BreakerSettings;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.provider.state.CooldownSettings;

/**
 * A 429 that states the key's request limit teaches the fleet a pace: a learned bucket shared by
 * every worker, so that the end of each cooldown is not a burst into the limit.
 */
@DatabaseTest
class LearnedPaceTest {

    private static final Logger LOG = LoggerFactory.getLogger(LearnedPaceTest.class);
    private static final String KEY = "fake:primary";

    private final FakeProvider fake = FakeProvider.start();
    private final List<Layover> instances = new ArrayList<>();
    private final List<ProviderGate> gates = new ArrayList<>();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
        gates.forEach(ProviderGate::stop);
        fake.close();
    }

    @Test
    void twoInstancesWithoutABucketLearnThePaceFromThe429sAndStopMeetingThem(TestDatabase db) throws Exception {
        FakeChat.complete(fake.secondary().url(), "warm up");
        int limit = 20;
        // refused calls count against the limit (as OpenAI documents): every 429 costs goodput
        fake.primary().limitPerSecond(limit).countRefused(true);
        AtomicInteger runs = new AtomicInteger();
        JobType<Chat> chat = JobType.builder("chat", Chat.class)
                .providerKey(KEY)
                .handler((args, ctx) -> {
                    runs.incrementAndGet();
                    FakeChat.complete(fake.primary().url(), args.text());
                    return Outcome.done();
                })
                .build();
        for (String name : new String[] {"worker-a", "worker-b"}) {
            instances.add(Workers.builder(db.newDataSource(16), name).register(chat).threads(8).start());
        }
        int jobs = 240;
        List<Chat> args = new ArrayList<>();
        for (int i = 0; i < jobs; i++) {
            args.add(new Chat("job " + i));
        }
        instances.get(0).enqueueBatch(chat, args);
        Await.equal(Duration.ofSeconds(90), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        instances.forEach(l -> l.awaitCompletions(Duration.ofSeconds(10)));

        int refused = fake.primary().rateLimited();
        LOG.info("MEASURED learned pace, limit {}/s, refused calls counted, 2 instances x 8 threads, {} jobs: {} calls, "
                + "{} answered 429 ({} %)", limit, jobs, runs.get(), refused, Math.round(100.0 * refused / runs.get()));
        assertEquals(jobs, fake.primary().successes(), "every job answered once");
        assertEquals(jobs + refused, runs.get(), "a run is a success or a 429, nothing else");
        assertEquals(0L, db.count("select coalesce(max(attempts), 0) from layover.job_history"), "no attempt spent");
        Map<String, Object> pace = db.row("select requests_per_minute, pace_learned_until from layover.provider_keys "
                + "where provider_key = ?", KEY);
        assertEquals(limit * 60 * CooldownSettings.DEFAULT_LEARNED_PACE_SHARE, (Double) pace.get("requests_per_minute"), 1e-6,
                "95 % of the limit the 429 stated (the message's RPS)");
        assertNotNull(pace.get("pace_learned_until"));
        // the first calls meet the limit (16 threads on a bucket of 20), then one cooldown; paced from there on
        assertTrue(refused <= 40, "429s only while learning, not at every cooldown's end: " + refused + " in " + runs.get());
    }

    @Test
    void aPaceIsLearnedOnceForTheFleetAndReadByAnotherInstance(TestDatabase db) {
        ProviderGate a = gate(db, "worker-a", CooldownSettings.defaults(), Map.of());
        ProviderGate b = gate(db, "worker-b", CooldownSettings.defaults(), Map.of());
        b.admitEndpoint(KEY, 0); // b knows the key
        a.afterCall(KEY, null, new Outcome.RateLimited(Duration.ofSeconds(1), "429", 50.0));
        Map<String, Object> row = db.row("select * from layover.buckets where provider_key = ?", KEY);
        assertEquals(2850.0, (Double) row.get("requests_per_minute"), 1e-9);
        assertNotNull(row.get("learned_until"));
        b.refreshOnce();
        BucketSettings learned = b.learnedBucket(KEY);
        assertNotNull(learned, "the other instance reads the learned pace with the key's state");
        assertEquals(2850.0, learned.requestsPerMinute(), 1e-9);
        Admission first = b.admitEndpoint(KEY, 0);
        assertTrue(first instanceof Admission.Wait w && w.reason().equals("cooldown"), "the cooldown first: " + first);
    }

    @Test
    void aLearnedPaceGivesNoBurstWhenTheCooldownEnds(TestDatabase db) throws InterruptedException {
        ProviderGate a = gate(db, "worker-a", CooldownSettings.defaults(), Map.of());
        a.afterCall(KEY, null, new Outcome.RateLimited(Duration.ofMillis(1), "429", 10.0));
        Await.until(Duration.ofSeconds(10), "the 1 ms cooldown is over",
                () -> db.count("select count(*) from layover.cooldowns where provider_key = ? and until <= now()", KEY) == 1);
        int went = 0;
        long began = System.nanoTime();
        for (int i = 0; i < 10; i++) {
            if (a.admitEndpoint(KEY, 0) instanceof Admission.Go) {
                went++;
            }
        }
        double seconds = (System.nanoTime() - began) / 1e9;
        // a fresh bucket of 9.5/s would hand out 9 permits at once; the provider just refused, so none is
        // handed out early: two, and what the pace accrues while the loop runs (a loaded machine is slow)
        long allowed = 2 + (long) Math.floor(seconds * 9.5);
        assertTrue(went <= allowed, "calls let through at once after the 429: " + went + " in " + seconds + " s");
    }

    @Test
    void aLearnedPaceDeletedByAnOperatorIsForgottenNotWrittenBack(TestDatabase db) {
        ProviderGate a = gate(db, "worker-a", CooldownSettings.defaults(), Map.of());
        a.afterCall(KEY, null, new Outcome.RateLimited(Duration.ofMillis(1), "429", 0.1));
        assertNotNull(a.learnedBucket(KEY));
        db.update("delete from layover.buckets where provider_key = ? and learned_until is not null", KEY);
        Await.until(Duration.ofSeconds(5), "the 1 ms cooldown over", () -> {
            a.refreshOnce(); // a worker's refresh, every second: the row is gone, so is the pace
            return !(a.admitEndpoint(KEY, 0) instanceof Admission.Wait);
        });
        assertNull(a.learnedBucket(KEY), "the instance dropped the pace when its refresh found the row gone");
        assertEquals(0L, db.count("select count(*) from layover.buckets where provider_key = ?", KEY), "and did not write it back");
        for (int i = 0; i < 5; i++) {
            assertSame(Admission.Go.class, a.admitEndpoint(KEY, 0).getClass(), "called freely");
        }
    }

    @Test
    void aConfiguredBucketIsNeverOverwrittenByAPaceLearnedElsewhere(TestDatabase db) {
        ProviderGate configured = gate(db, "worker-a", CooldownSettings.defaults(),
                Map.of(KEY, BucketSettings.requestsPerSecond(10)));
        configured.start(); // writes its bucket
        ProviderGate learner = gate(db, "worker-b", CooldownSettings.defaults(), Map.of());
        configured.afterCall(KEY, null, new Outcome.RateLimited(Duration.ofSeconds(1), "429", 50.0));
        learner.afterCall(KEY, null, new Outcome.RateLimited(Duration.ofSeconds(1), "429", 50.0));
        Map<String, Object> row = db.row("select * from layover.buckets where provider_key = ?", KEY);
        assertEquals(600.0, (Double) row.get("requests_per_minute"), 1e-9);
        assertNull(row.get("learned_until"));
        assertNull(learner.learnedBucket(KEY));
    }

    @Test
    void aLearnedPaceLapsesAndCanBeTurnedOff(TestDatabase db) {
        ProviderGate brief = gate(db, "worker-a", CooldownSettings.defaults().withLearnedPace(Duration.ofSeconds(2), 0.5),
                Map.of());
        brief.afterCall(KEY, null, new Outcome.RateLimited(Duration.ofMillis(1), "429", 10.0));
        BucketSettings learned = brief.learnedBucket(KEY);
        assertNotNull(learned);
        assertEquals(300.0, learned.requestsPerMinute(), 1e-9, "half of 10/s");
        Await.until(Duration.ofSeconds(15), "the pace lapsed", () -> {
            brief.refreshOnce();
            return brief.learnedBucket(KEY) == null;
        });
        assertSame(Admission.Go.class, brief.admitEndpoint(KEY, 0).getClass(), "called freely again");
        db.update("update layover.buckets set request_tat = now() + interval '1 hour' where provider_key = ?", KEY);
        brief.afterCall(KEY, null, new Outcome.RateLimited(Duration.ofMillis(1), "429 again", 10.0));
        assertEquals(true, db.value("select request_tat < now() + interval '5 seconds' from layover.buckets "
                + "where provider_key = ?", KEY), "a lapsed pace starts afresh, not from the permits it handed out before");

        ProviderGate off = gate(db, "worker-b", CooldownSettings.defaults().withoutLearnedPace(), Map.of());
        off.afterCall("other:key", null, new Outcome.RateLimited(Duration.ofMillis(1), "429", 10.0));
        assertEquals(0L, db.count("select count(*) from layover.buckets where provider_key = 'other:key'"));
    }

    private ProviderGate gate(TestDatabase db, String name, CooldownSettings cooldowns, Map<String, BucketSettings> buckets) {
        ProviderGate g = new ProviderGate(new Db(db.dataSource()), Clock.systemUTC(), name,
                new ProviderGate.Config(BreakerSettings.defaults(), Map.of(), cooldowns, buckets, List.of()));
        gates.add(g);
        return g;
    }
}
