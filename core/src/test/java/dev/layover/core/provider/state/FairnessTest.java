package dev.layover.core.provider.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.testing.Await;
import dev.layover.testing.DatabaseTest;
import dev.layover.testing.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Fair share within one provider key's bucket, with two Layover instances on a real Postgres: the
 * tenants enqueue together, the biggest first (what first come, first served serves worst), and
 * the permits go round the tenants with waiting jobs in proportion to their weights.
 */
@DatabaseTest
class FairnessTest {

    private static final String KEY = "openai:gpt-4o-mini";

    /** A job of a tenant. */
    public record Work(String tenant, int n) {}

    private final List<Layover> instances = new ArrayList<>();
    private final ConcurrentLinkedQueue<String> started = new ConcurrentLinkedQueue<>();

    @AfterEach
    void stop() {
        instances.forEach(Layover::stop);
    }

    private JobType<Work> type(boolean fair) {
        JobType.Builder<Work> b = JobType.builder(fair ? "fair-work" : "fifo-work", Work.class)
                .providerKey(KEY)
                .handler((w, ctx) -> {
                    started.add(w.tenant());
                    return Outcome.done();
                });
        if (fair) {
            b.fairnessKey(w -> "tenant:" + w.tenant());
        }
        return b.build();
    }

    private JobType<Work> twoInstances(TestDatabase db, boolean fair) {
        return twoInstances(db, fair, 1);
    }

    private JobType<Work> twoInstances(TestDatabase db, boolean fair, double weightOfA) {
        JobType<Work> type = type(fair);
        for (String name : new String[] {"worker-a", "worker-b"}) {
            Layover.Builder b = Workers.builder(db.newDataSource(6), name).register(type)
                    .bucket(KEY, BucketSettings.requestsPerSecond(20));
            if (weightOfA != 1) {
                b.fairnessWeight("tenant:a", weightOfA);
            }
            instances.add(b.start());
        }
        return type;
    }

    private static List<Work> jobs(String tenant, int n) {
        List<Work> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(new Work(tenant, i));
        }
        return out;
    }

    /** How many of the first {@code n} starts each tenant had. */
    private Map<String, Integer> firstStarts(int n) {
        Map<String, Integer> out = new HashMap<>();
        int i = 0;
        for (String t : started) {
            if (i++ == n) {
                break;
            }
            out.merge(t, 1, Integer::sum);
        }
        return out;
    }

    @Test
    void theTenantsWithWaitingJobsShareTheKeysPermitsEqually(TestDatabase db) {
        JobType<Work> type = twoInstances(db, true);
        List<Work> all = jobs("a", 100); // in one statement, the biggest backlog first
        all.addAll(jobs("b", 40));
        all.addAll(jobs("c", 10));
        instances.get(0).enqueueBatch(type, all);
        Await.equal(Duration.ofSeconds(60), "all done", 150L,
                () -> db.count("select count(*) from layover.job_history where job_type = 'fair-work'"));

        // the first 30 permits (1.5 s at 20/s): 10 each
        Map<String, Integer> first = firstStarts(30);
        for (String t : List.of("a", "b", "c")) {
            int got = first.getOrDefault(t, 0);
            assertTrue(got >= 6 && got <= 14, "tenant " + t + " had " + got + " of the first 30 permits: " + first);
        }
        // c's 10 jobs were all among the first 45, though enqueued behind 140 others
        List<String> order = new ArrayList<>(started);
        int lastC = order.lastIndexOf("c");
        assertTrue(lastC < 45, "c's last job started " + (lastC + 1) + "th of 150: " + order.subList(0, 50));
        assertEquals(0L, db.count("select count(*) from layover.job_history where job_type = 'fair-work' and attempts > 0"),
                "no attempt spent waiting");
        assertEquals(0L, db.count("select count(*) from layover.dead_letters"));
        assertEquals(1L, db.count("select count(*) from layover.fair_lines where provider_key = ? and class_clocks <> '{}'", KEY),
                "the key's fair queue moved its clock");
    }

    @Test
    void weightsGiveTheirShare(TestDatabase db) {
        JobType<Work> type = twoInstances(db, true, 3);
        List<Work> all = jobs("a", 100);
        all.addAll(jobs("b", 100));
        instances.get(0).enqueueBatch(type, all);
        Await.equal(Duration.ofSeconds(60), "the first 80", true, () -> started.size() >= 80);
        // a weighs 3, b 1: of the first 80 permits about 60 and 20
        Map<String, Integer> first = firstStarts(80);
        int a = first.getOrDefault("a", 0);
        assertTrue(a >= 52 && a <= 68, "a (weight 3) had " + a + " of the first 80: " + first);
        assertEquals(3.0, ((Number) db.value("select weight from layover.fairness where fairness_key = 'tenant:a'"
                + " and provider_key = ? limit 1", KEY)).doubleValue(), 1e-9, "the view shows the weight");
    }

    @Test
    void anOperatorsWeightWinsOverTheConfiguredOneUntilReverted(TestDatabase db) {
        twoInstances(db, true, 3);
        ProviderStates ps = instances.get(0).providerStates();
        String weight = "select weight from layover.fairness_weights where pattern = ?";
        assertEquals(3.0, db.value(weight, "tenant:a"), "configured at start");
        assertEquals(3.0, ps.setFairnessWeight("tenant:a", 5, "a big launch"));
        assertEquals(5.0, db.value(weight, "tenant:a"));
        assertEquals(5.0, ((Number) db.value("select layover.fairness_weight('tenant:a')")).doubleValue());
        assertEquals(null, ps.setFairnessWeight("tenant:premium-*", 2, null), "a pattern without a row before");
        assertEquals(2.0, ((Number) db.value("select layover.fairness_weight('tenant:premium-7')")).doubleValue());
        assertEquals(1.0, ((Number) db.value("select layover.fairness_weight('tenant:basic-7')")).doubleValue());

        // a restart of a worker with the configuration keeps the operator's weight
        instances.get(1).stop();
        instances.set(1, Workers.builder(db.newDataSource(2), "worker-b2").register(type(true))
                .bucket(KEY, BucketSettings.requestsPerSecond(20)).fairnessWeight("tenant:a", 3).start());
        assertEquals(5.0, db.value(weight, "tenant:a"), "the operator's weight stays");

        assertEquals(5.0, ps.revertFairnessWeight("tenant:a"));
        assertEquals(3.0, db.value(weight, "tenant:a"), "the configured weight again");
        assertEquals(2.0, ps.revertFairnessWeight("tenant:premium-*"));
        assertEquals(0L, db.count("select count(*) from layover.fairness_weights where pattern = 'tenant:premium-*'"),
                "no configured weight: the row goes (weight 1)");
        assertEquals(null, ps.revertFairnessWeight("tenant:premium-*"), "nothing to revert");
        assertThrows(dev.layover.core.ConfigurationException.class, () -> ps.setFairnessWeight("tenant:a", 0, null));
    }

    @Test
    void higherPriorityFirstWithAReservedShareForTheRest(TestDatabase db) {
        JobType<Work> type = twoInstances(db, true);
        List<Work> all = jobs("batch", 100); // enqueued first
        all.addAll(jobs("interactive", 40));
        instances.get(0).enqueueBatch(type, all,
                w -> EnqueueOptions.now().withPriority(w.tenant().equals("interactive") ? 5 : 0));
        Await.equal(Duration.ofSeconds(60), "the first 50", true, () -> started.size() >= 50);
        List<String> order = new ArrayList<>(started).subList(0, 50);
        int interactive = Collections.frequency(order.subList(0, 40), "interactive");
        int batch = Collections.frequency(order.subList(0, 40), "batch");
        // interactive first; batch still gets its reserved tenth: of the first 40 permits 36 and 4
        assertTrue(interactive >= 33, "interactive had " + interactive + " of the first 40 permits: " + order);
        assertTrue(batch >= 2, "batch was not starved: " + batch + " of the first 40 permits: " + order);
    }

    @Test
    void withoutAFairnessKeyTheKeysPermitsAreFirstComeFirstServed(TestDatabase db) {
        JobType<Work> type = twoInstances(db, false);
        instances.get(0).enqueueBatch(type, jobs("a", 60));
        instances.get(0).enqueueBatch(type, jobs("c", 10));
        Await.equal(Duration.ofSeconds(60), "all done", 70L,
                () -> db.count("select count(*) from layover.job_history where job_type = 'fifo-work'"));
        List<String> order = new ArrayList<>(started);
        assertTrue(order.indexOf("c") >= 40, "c waited behind a's backlog, as before: " + order);
        assertEquals(0L, db.count("select count(*) from layover.fair_lines"), "no fair queue");
    }
}
