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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.layover.core.internal.gate.ProviderGate;
import dev.layover.core.provider.state.Workers;
import dev.layover.core.provider.state.BucketSettings;

/**
 * What the provider state costs in database round trips per job on the worker threads: nothing,
 * throttled or not (the pick admits a job under its key's bucket; a job waiting for it costs no
 * statement), beyond one read of a key's state when first met. Counted, not timed: the
 * gate counts its statements (on worker threads and in the background), and a counting data
 * source counts every statement of the instance.
 */
@DatabaseTest
class QueryCostTest {

    private static final Logger LOG = LoggerFactory.getLogger(QueryCostTest.class);
    private static final int JOBS = 400;

    /** Statement counts of one run. */
    private record Cost(String what, int jobs, long all, long state, long inline, long background) {
        double perJob(long n) {
            return (double) n / jobs;
        }
    }

    private Cost run(TestDatabase db, String what, String key, BucketSettings bucket, int jobs) {
        Counting counting = new Counting(db.newDataSource(12));
        JobType.Builder<Chat> b = JobType.builder("chat", Chat.class).handler((args, ctx) -> Outcome.done());
        if (key != null) {
            b.providerKey(key);
        }
        JobType<Chat> chat = b.build();
        Layover.Builder lb = Workers.builder(counting.dataSource(), "worker-a").register(chat).threads(8).migrate(false);
        if (bucket != null) {
            lb.bucket(key, bucket);
        }
        Layover layover = lb.build();
        List<Chat> args = new ArrayList<>();
        for (int i = 0; i < jobs; i++) {
            args.add(new Chat("job " + i));
        }
        layover.enqueueBatch(chat, args);
        counting.reset();
        layover.start();
        Await.equal(Duration.ofSeconds(120), "job rows", 0L, () -> db.count("select count(*) from layover.jobs"));
        layover.awaitCompletions(Duration.ofSeconds(10));
        layover.stop();
        ProviderGate gate = ((ProviderStateHandle) layover.providerStates()).gate();
        Cost c = new Cost(what, jobs, counting.all.get(), counting.state.get(), gate.inlineStatements(),
                gate.backgroundStatements());
        LOG.info("MEASURED {}: {} jobs, {} statements in all ({} per job), {} on provider state: {} inline ({} per job), "
                + "{} in the background", what, jobs, c.all(), String.format("%.2f", c.perJob(c.all())), c.state(), c.inline(),
                String.format("%.3f", c.perJob(c.inline())), c.background());
        db.execute("truncate layover.breakers, layover.cooldowns, layover.buckets");
        return c;
    }

    @Test
    void aKeyAddsNoRoundTripPerJobOnTheWorkerThreadsThrottledOrNot(TestDatabase db) {
        Cost none = run(db, "no provider key", null, null, JOBS);
        Cost keyed = run(db, "provider key, nothing throttled", "fake:primary", null, JOBS);
        Cost bucketed = run(db, "provider key with a bucket far from its limit", "fake:primary",
                BucketSettings.requestsPerSecond(10_000), JOBS);
        Cost throttled = run(db, "provider key with a bucket at its limit (50/s)", "fake:primary",
                BucketSettings.requestsPerSecond(50).withBurst(Duration.ofMillis(100)), 100);

        assertEquals(0, none.inline());
        assertTrue(keyed.inline() <= 2, "one read of the key's state when first seen, then none: " + keyed.inline());
        assertTrue(bucketed.inline() <= 2, "the pick took the permits: " + bucketed.inline());
        assertTrue(throttled.inline() <= 2, "a throttled job waits at the pick, without a statement of its own: "
                + throttled.inline());
        LOG.info("MEASURED extra statements per job, all sources, against no provider key ({} per job): "
                + "unthrottled key {}, bucket far from its limit {}; a throttled job costs {} provider-state statements "
                + "on the worker threads (total {} per job, the picks included)",
                String.format("%.2f", none.perJob(none.all())),
                String.format("%+.2f", keyed.perJob(keyed.all()) - none.perJob(none.all())),
                String.format("%+.2f", bucketed.perJob(bucketed.all()) - none.perJob(none.all())),
                String.format("%.2f", throttled.perJob(throttled.inline())),
                String.format("%.2f", throttled.perJob(throttled.all())));
    }

    /** A data source whose statements are counted. */
    private static final class Counting {
        private final DataSource target;
        final AtomicLong all = new AtomicLong();
        final AtomicLong state = new AtomicLong();

        Counting(DataSource target) {
            this.target = target;
        }

        void reset() {
            all.set(0);
            state.set(0);
        }

        DataSource dataSource() {
            return dev.layover.core.StatementWatch.of(target, sql -> {
                all.incrementAndGet();
                if (sql.contains("layover.breakers") || sql.contains("layover.cooldowns") || sql.contains("layover.buckets")) {
                    state.incrementAndGet();
                }
            });
        }
    }
}
