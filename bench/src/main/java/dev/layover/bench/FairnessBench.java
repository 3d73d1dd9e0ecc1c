package dev.layover.bench;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.provider.state.BucketSettings;
import dev.layover.core.tokens.TokenEstimate;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import javax.sql.DataSource;

/**
 * Fair share (issue 19): one provider key limited to R permits a second, shared by tenants. Three
 * tenants enqueue 20,000, 1,000 and 50 jobs at the same moment (one transaction, the biggest
 * first: what first come, first served serves worst) and a fourth arrives {@code lateAfter} later
 * with 20 jobs. Two Layover instances in this JVM (8 threads each) run the jobs; a job's "call"
 * takes {@code callMs}. Arms: fair share with equal weights; the same with fairness off (first
 * come, first served: today's behaviour, the jobs have no fairness key); weights 3:1:1 for the
 * first three tenants; and a priority run (the second tenant's jobs interactive, priority 5).
 * Then the same tenants where the key's limit is not a request rate, fair and off: a bucket
 * of T = 300 x R tokens a second (one second of burst) whose tenants' calls take 900, 100, 300
 * and 900 tokens (shares and goodput counted in tokens), and a concurrency limit of 8 slots with
 * calls of 8 / R seconds (R calls a second when every slot is busy).
 *
 * <p>Per tenant: its share of the permits while it was active (from its enqueue to its last
 * start within the window) against its share over its own active time in the ideal weighted fair
 * schedule of the same permits (a simulation: the bucket's capacity at the start, then one permit
 * every 1 / R, each to the active tenant with the least permits per weight, the same arrivals); p50 / p95 wait from enqueue to start against
 * the ideal's; jobs that had not started when the window ended count as waiting the whole window
 * (a lower bound, marked {@code >}). Goodput: starts in the window over R x window. Jain's index
 * over the tenants: of measured share / ideal share.
 */
public final class FairnessBench {

    private static final String KEY = "openai:fair-bench";

    /**
     * @param rate R, permits a second
     * @param sizes the first three tenants' jobs
     * @param lateJobs the fourth tenant's jobs
     * @param lateAfter when it arrives
     * @param window how long each arm runs
     * @param callMs how long a job's call takes
     * @param threads worker threads per instance (two instances)
     * @param poll the workers' poll interval
     */
    public record Settings(int rate, int[] sizes, int lateJobs, Duration lateAfter, Duration window, int callMs,
            int threads, Duration poll) {

        /** @return R = 50/s, 20,000 / 1,000 / 50 jobs, 20 more after 30 s, 50 s per arm */
        public static Settings full(Duration poll) {
            return new Settings(50, new int[] {20_000, 1_000, 50}, 20, Duration.ofSeconds(30), Duration.ofSeconds(50), 20, 8,
                    poll);
        }

        /** @return a smoke test */
        public static Settings quick(Duration poll) {
            return new Settings(50, new int[] {400, 60, 10}, 5, Duration.ofSeconds(2), Duration.ofSeconds(4), 5, 4, poll);
        }
    }

    /** One tenant of one arm. */
    public record Tenant(String name, double weight, int jobs, int started, double share, double idealShare, double p50,
            double p95, double idealP50, double idealP95, boolean allStarted) {}

    /**
     * One arm.
     *
     * @param perSecond permits started in each second of the window, per tenant ({@code [second][tenant]})
     */
    public record Arm(String label, List<Tenant> tenants, double goodput, double jain, long fairRounds, int[][] perSecond,
            Map<String, Long> parked) {}

    /** What the key's limit counts. */
    enum Limit {
        /** a bucket of R requests a second */
        REQUESTS,
        /** a bucket of {@link #TOKENS_PER_PERMIT} x R tokens a second; the tenants' calls cost {@link #TOKEN_COSTS} */
        TOKENS,
        /** a concurrency limit of {@link #SLOTS} slots, calls of SLOTS / R seconds */
        SLOTS
    }

    /** The token arm's tokens per second, per permit of R: its bucket admits T = this x R tokens a second. */
    static final int TOKENS_PER_PERMIT = 300;

    /** The tokens of one call of each tenant in the token arm (a: big prompts, b: small, c: medium, d: big). */
    static final int[] TOKEN_COSTS = {900, 100, 300, 900};

    /** The concurrency arm's slots. */
    static final int SLOTS = 8;

    /** A job: its tenant and number. */
    public record Work(String tenant, int n) {}

    private FairnessBench() {}

    /**
     * Runs the four arms.
     *
     * @param ds the database (Layover's schema migrated)
     * @param s the settings
     * @return fair, first come first served, weighted, priority
     */
    public static List<Arm> measure(DataSource ds, Settings s) throws Exception {
        List<Arm> out = new ArrayList<>();
        double[] equal = {1, 1, 1, 1};
        // while tuning, some arms only: -Dlayover.bench.fairness.arms=0,4 (by index, in the order below)
        String only = System.getProperty("layover.bench.fairness.arms");
        java.util.function.IntPredicate runs = i -> only == null || Arrays.asList(only.split(",")).contains(String.valueOf(i));
        Object[][] arms = {
            {"fair share, equal weights", Limit.REQUESTS, true, equal, -1},
            {"fairness off (first come, first served)", Limit.REQUESTS, false, equal, -1},
            {"fair share, weights 3:1:1 (late tenant 1)", Limit.REQUESTS, true, new double[] {3, 1, 1, 1}, -1},
            {"fair share, tenant b interactive (priority 5)", Limit.REQUESTS, true, equal, 1},
            {"token limit, fair share of tokens", Limit.TOKENS, true, equal, -1},
            {"token limit, fairness off (first come, first served)", Limit.TOKENS, false, equal, -1},
            {"concurrency limit, fair share of slots", Limit.SLOTS, true, equal, -1},
            {"concurrency limit, fairness off (first come, first served)", Limit.SLOTS, false, equal, -1},
        };
        for (int i = 0; i < arms.length; i++) {
            if (runs.test(i)) {
                Object[] a = arms[i];
                out.add(arm(ds, s, (String) a[0], (Limit) a[1], (Boolean) a[2], (double[]) a[3], (Integer) a[4]));
            }
        }
        return out;
    }

    private static Arm arm(DataSource ds, Settings s, String label, Limit limit, boolean fair, double[] weights,
            int interactive) throws Exception {
        clean(ds);
        String[] names = {"a", "b", "c", "d"};
        ConcurrentLinkedQueue<long[]> starts = new ConcurrentLinkedQueue<>(); // tenant index, nanoTime
        String typeName = "fair-bench-" + (fair ? "fair" : "fifo");
        int callMs = limit == Limit.SLOTS ? SLOTS * 1000 / s.rate() : s.callMs();
        JobType.Builder<Work> b = JobType.builder(typeName, Work.class).providerKey(KEY)
                .handler((w, ctx) -> {
                    starts.add(new long[] {w.tenant().charAt(0) - 'a', System.nanoTime()});
                    Thread.sleep(callMs); // the provider call
                    return Outcome.done();
                });
        if (limit == Limit.TOKENS) {
            b.tokenEstimate(w -> TokenEstimate.total(TOKEN_COSTS[w.tenant().charAt(0) - 'a']));
        }
        if (fair) {
            b.fairnessKey(w -> "tenant:" + w.tenant());
        }
        JobType<Work> type = b.build();
        List<Layover> instances = new ArrayList<>();
        try {
            for (String name : new String[] {"fair-a", "fair-b"}) {
                Layover.Builder lb = Layover.builder(ds).workerName(name).register(type).threads(s.threads())
                        .pollInterval(s.poll()).history(false).migrate(false).shutdownMaxWait(Duration.ofSeconds(2));
                switch (limit) {
                    case REQUESTS -> lb.bucket(KEY, BucketSettings.requestsPerSecond(s.rate()));
                    case TOKENS -> lb.bucket(KEY, BucketSettings.tokensPerMinute(60.0 * TOKENS_PER_PERMIT * s.rate())
                            .withTokenBurst(Duration.ofSeconds(1)));
                    case SLOTS -> lb.concurrencyLimit(KEY, SLOTS);
                }
                for (int i = 0; i < 3; i++) {
                    if (weights[i] != 1) {
                        lb.fairnessWeight("tenant:" + names[i], weights[i]);
                    }
                }
                instances.add(lb.start());
            }
            List<Work> first = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                for (int n = 0; n < s.sizes()[i]; n++) {
                    first.add(new Work(names[i], n));
                }
            }
            long t0 = System.nanoTime();
            try (Connection c = ds.getConnection()) { // one transaction: the three tenants' jobs appear together
                c.setAutoCommit(false);
                instances.get(0).enqueueBatch(c, type, first,
                        w -> EnqueueOptions.now().withPriority(w.tenant().charAt(0) - 'a' == interactive ? 5 : 0));
                c.commit();
            }
            long enqueued0 = System.nanoTime();
            System.out.printf(java.util.Locale.ROOT, "%s: the first %,d jobs enqueued in one transaction in %.2f s%n", label,
                    first.size(), (enqueued0 - t0) / 1e9);
            long lateAt = t0 + s.lateAfter().toNanos();
            while (System.nanoTime() < lateAt) { // a benchmark's arrival schedule, not a test wait
                Thread.sleep(20);
            }
            List<Work> late = new ArrayList<>();
            for (int n = 0; n < s.lateJobs(); n++) {
                late.add(new Work("d", n));
            }
            long lateEnqueued = System.nanoTime();
            instances.get(1).enqueueBatch(type, late);
            long end = t0 + s.window().toNanos();
            while (System.nanoTime() < end) {
                Thread.sleep(50);
            }
            long rounds = fairRounds(ds);
            Map<String, Long> parked = parked(ds);
            long[] arrivals = {enqueued0, enqueued0, enqueued0, lateEnqueued};
            int[] jobs = {s.sizes()[0], s.sizes()[1], s.sizes()[2], s.lateJobs()};
            double[] costs = limit == Limit.TOKENS ? Arrays.stream(TOKEN_COSTS).asDoubleStream().toArray()
                    : new double[] {1, 1, 1, 1};
            double rate = limit == Limit.TOKENS ? (double) TOKENS_PER_PERMIT * s.rate() : s.rate();
            double capacity = limit == Limit.SLOTS ? SLOTS : rate; // a bucket holds one second; slots start at once
            return summarize(label, starts, arrivals, jobs, weights, costs, rate, capacity, t0, end, rounds, parked);
        } finally {
            instances.forEach(Layover::stop);
        }
    }

    /**
     * @param costs what one job of each tenant takes of the limit (1: a permit or slot; tokens)
     * @param rate what the limit admits a second, in those units
     * @param capacity what it admits at once at the start
     */
    private static Arm summarize(String label, ConcurrentLinkedQueue<long[]> starts, long[] arrivals, int[] jobs,
            double[] weights, double[] costs, double rate, double capacity, long t0, long end, long rounds,
            Map<String, Long> parked) {
        List<long[]> all = new ArrayList<>(starts);
        all.removeIf(x -> x[1] > end);
        double endS = (end - t0) / 1e9;
        double[][] measured = new double[4][];
        for (int i = 0; i < 4; i++) {
            final int ti = i;
            double[] at = all.stream().filter(v -> v[0] == ti).mapToDouble(v -> (v[1] - t0) / 1e9).sorted().toArray();
            measured[i] = Arrays.copyOf(at, jobs[i]);
            Arrays.fill(measured[i], at.length, jobs[i], Double.NaN);
        }
        double[][] ideal = idealStarts(arrivals, jobs, weights, costs, t0, end, rate, capacity);
        String[] names = {"a", "b", "c", "d"};
        List<Tenant> tenants = new ArrayList<>();
        double[] x = new double[4];
        for (int i = 0; i < 4; i++) {
            double arrival = (arrivals[i] - t0) / 1e9;
            int started = (int) Arrays.stream(measured[i]).filter(v -> !Double.isNaN(v)).count();
            double share = share(measured, costs, i, arrival, endS);
            double idealShare = share(ideal, costs, i, arrival, endS);
            double[] w = waits(measured[i], arrival, endS);
            double[] iw = waits(ideal[i], arrival, endS);
            tenants.add(new Tenant(names[i], weights[i], jobs[i], started, share, idealShare, pct(w, 0.5), pct(w, 0.95),
                    pct(iw, 0.5), pct(iw, 0.95), started == jobs[i]));
            x[i] = idealShare == 0 ? 0 : share / idealShare;
        }
        double sum = Arrays.stream(x).sum();
        double sq = Arrays.stream(x).map(v -> v * v).sum();
        double jain = sq == 0 ? 0 : sum * sum / (4 * sq);
        double goodput = all.stream().mapToDouble(v -> costs[(int) v[0]]).sum() / endS / rate;
        int[][] perSecond = new int[(int) Math.ceil(endS)][4];
        for (long[] v : all) {
            int sec = (int) Math.min(perSecond.length - 1, (v[1] - t0) / 1_000_000_000L);
            perSecond[sec][(int) v[0]]++;
        }
        return new Arm(label, tenants, goodput, jain, rounds, perSecond, parked);
    }

    /**
     * The ideal weighted fair schedule of what the key's limit admits: {@code capacity} at t0, then
     * {@code rate} a second (a job of cost c starts once the limit has admitted c more); each job
     * to the tenant that has arrived, has jobs left and the least cost served per weight (a tenant
     * arriving starts at the clock: no credit for the time before). Returns each tenant's start
     * times in seconds from t0, NaN for a job the window did not serve.
     */
    static double[][] idealStarts(long[] arrivals, int[] jobs, double[] weights, double[] costs, long t0, long end,
            double rate, double capacity) {
        int n = arrivals.length;
        int[] served = new int[n];
        double[][] out = new double[n][];
        for (int i = 0; i < n; i++) {
            out[i] = new double[jobs[i]];
            Arrays.fill(out[i], Double.NaN);
        }
        double[] vt = new double[n];
        double clock = 0;
        boolean[] joined = new boolean[n];
        double tat = 0; // GCRA: seconds from t0; a job of cost c fits at max(now, tat + (c - capacity) / rate)
        double last = 0;
        while (true) {
            // the moment the limit has room again (for anything): who has arrived by then competes
            double free = Math.max(last, tat - capacity / rate);
            if (t0 + free * 1e9 > end) {
                break;
            }
            int best = -1;
            double nextArrival = Double.MAX_VALUE;
            for (int i = 0; i < n; i++) {
                if (served[i] >= jobs[i]) {
                    continue;
                }
                double arrival = (arrivals[i] - t0) / 1e9;
                if (arrival > free) {
                    nextArrival = Math.min(nextArrival, arrival);
                    continue;
                }
                if (!joined[i]) {
                    joined[i] = true;
                    vt[i] = Math.max(vt[i], clock);
                }
                if (best < 0 || vt[i] < vt[best]) {
                    best = i;
                }
            }
            if (best < 0) {
                if (nextArrival == Double.MAX_VALUE) {
                    break;
                }
                last = nextArrival; // idle until the next tenant arrives: nothing is banked beyond the capacity
                continue;
            }
            double at = Math.max(free, tat + (Math.min(costs[best], capacity) - capacity) / rate);
            if (t0 + at * 1e9 > end) {
                break;
            }
            out[best][served[best]++] = at;
            tat = Math.max(tat, at) + costs[best] / rate;
            last = at;
            clock = vt[best];
            vt[best] += costs[best] / weights[best];
        }
        return out;
    }

    /** Waits (s) from start times (s from t0); a job never started waits until the window's end. */
    private static double[] waits(double[] startsFromT0, double arrivalFromT0, double endFromT0) {
        double[] w = new double[startsFromT0.length];
        for (int k = 0; k < w.length; k++) {
            w[k] = (Double.isNaN(startsFromT0[k]) ? endFromT0 : startsFromT0[k]) - arrivalFromT0;
        }
        return w;
    }

    /**
     * A tenant's share of all that was started (permits, or tokens by {@code costs}) from its
     * arrival to its last start (the window's end when it had jobs left), in a schedule of start
     * times (s from t0, NaN: not started).
     */
    static double share(double[][] starts, double[] costs, int i, double arrivalFromT0, double endFromT0) {
        double last = arrivalFromT0;
        double mine = 0;
        boolean done = true;
        for (double at : starts[i]) {
            if (Double.isNaN(at)) {
                done = false;
            } else {
                mine += costs[i];
                last = Math.max(last, at);
            }
        }
        double until = done ? last : endFromT0;
        double total = 0;
        for (int t = 0; t < starts.length; t++) {
            for (double at : starts[t]) {
                if (!Double.isNaN(at) && at >= arrivalFromT0 - 1e-9 && at <= until + 1e-9) {
                    total += costs[t];
                }
            }
        }
        return total == 0 ? 0 : mine / total;
    }

    static double pct(double[] v, double q) {
        double[] c = v.clone();
        Arrays.sort(c);
        return c.length == 0 ? Double.NaN : c[Math.min(c.length - 1, (int) Math.ceil(c.length * q) - 1)];
    }

    /**
     * The cost of the pick's fair order with many fairness keys: 20,000 waiting jobs spread over
     * {@code flows} fairness keys, tagged (each flow's jobs one apart, as enqueue tags them), then
     * {@code rounds} picks each half a second later on the database's view ({@code p_now} moves, no
     * sleeping), each admitting what the key's bucket (R = 50/s, 1 s burst) has for it; database
     * time per pick and per admitted job.
     *
     * @return {flows, ms per pick (median), µs per admitted job (median), picks}
     */
    static double[] scale(DataSource ds, int flows, int rounds) throws Exception {
        clean(ds);
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("insert into layover.buckets (provider_key, requests_per_minute, burst_ms) values ('" + KEY
                    + "', 3000, 1000)");
            st.execute("insert into layover.scheduled_tasks (task_name, task_instance, execution_time, picked, version, "
                    + "priority, provider_key, fairness_key, fair_tag) select 'fair-bench-scale', 'j' || i, "
                    + "now() - interval '1 s', false, 1, 0, '" + KEY + "', 'tenant:' || (i % " + flows + "), "
                    + "(i / " + flows + ")::float8 + 1 from generate_series(1, 20000) i");
            st.execute("analyze layover.scheduled_tasks");
            double[] ms = new double[rounds];
            double[] perJob = new double[rounds];
            for (int i = 0; i < rounds; i++) {
                long t = System.nanoTime();
                try (ResultSet rs = st.executeQuery("select count(*) filter (where verdict = 'run') from layover.pick("
                        + "'scale-bench', now() + interval '" + (i + 1) * 500 + " milliseconds', 100, "
                        + "array['fair-bench-scale'], null, '{}'::jsonb)")) {
                    rs.next();
                    double took = (System.nanoTime() - t) / 1e6;
                    ms[i] = took;
                    perJob[i] = took * 1000 / Math.max(1, rs.getInt(1));
                }
                st.execute("delete from layover.scheduled_tasks where task_name = 'fair-bench-scale' and picked");
            }
            st.execute("delete from layover.scheduled_tasks where task_name = 'fair-bench-scale'");
            return new double[] {flows, pct(ms, 0.5), pct(perJob, 0.5), rounds};
        }
    }

    /** Dead letters of the arm by failure type (none expected: a wait for a fair turn never parks). */
    private static Map<String, Long> parked(DataSource ds) throws Exception {
        Map<String, Long> out = new LinkedHashMap<>();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select failure_type, count(*) from layover.dead_letters"
                        + " where job_type like 'fair-bench-%' group by 1 order by 1")) {
            while (rs.next()) {
                out.put(rs.getString(1), rs.getLong(2));
            }
        }
        return out;
    }

    private static long fairRounds(DataSource ds) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select coalesce(sum(picks), 0) from layover.fair_lines")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static void clean(DataSource ds) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("select layover.forget_provider_keys(array['" + KEY + "'])");
            st.execute("delete from layover.scheduled_tasks where task_name like 'fair-bench-%'");
            st.execute("delete from layover.dead_letters where job_type like 'fair-bench-%'");
            st.execute("delete from layover.fair_lines");
            st.execute("delete from layover.fairness_weights");
        }
    }

    /** Markdown for the scale comparison. */
    static void printScale(java.io.PrintStream out, double[] few, double[] many) {
        out.println("#### A pick's database time with 20,000 waiting jobs over 10 and over 10,000 fairness keys (R = 50/s, a pick every 0.5 s: 25 admitted)");
        out.println();
        out.println("| fairness keys | ms per pick (median) | µs per admitted job (median) | picks |");
        out.println("|---|---|---|---|");
        for (double[] r : new double[][] {few, many}) {
            out.printf(java.util.Locale.ROOT, "| %,d | %.2f | %.0f | %.0f |%n", (long) r[0], r[1], r[2], r[3]);
        }
        out.printf(java.util.Locale.ROOT, "%n**ratio, 10,000 keys / 10 keys: %.2f× per admitted job**%n%n", many[2] / few[2]);
    }

    /** Markdown for one run. */
    static void print(java.io.PrintStream out, List<Arm> arms, Settings s) {
        out.printf(java.util.Locale.ROOT, "### Fair share: R = %d/s, tenants a, b, c enqueue %,d / %,d / %,d jobs together, d %d jobs %d s later, %d s per arm, 2 instances x %d threads%n%n",
                s.rate(), s.sizes()[0], s.sizes()[1], s.sizes()[2], s.lateJobs(), s.lateAfter().toSeconds(),
                s.window().toSeconds(), s.threads());
        for (Arm a : arms) {
            out.printf(java.util.Locale.ROOT, "#### %s: goodput %.3f R, Jain's index %.3f, fair picks %,d, parked %s%n%n",
                    a.label(), a.goodput(), a.jain(), a.fairRounds(), a.parked().isEmpty() ? "0" : a.parked());
            out.println("| tenant | weight | jobs | started | share while active | ideal share | ratio | wait p50 / p95 (s) | ideal p50 / p95 (s) | p95 / ideal |");
            out.println("|---|---|---|---|---|---|---|---|---|---|");
            for (Tenant t : a.tenants()) {
                String gt = t.allStarted() ? "" : ">";
                out.printf(java.util.Locale.ROOT, "| %s | %.0f | %,d | %,d | %.3f | %.3f | %.2f | %s%.2f / %s%.2f | %.2f / %.2f | %s%.2f× |%n",
                        t.name(), t.weight(), t.jobs(), t.started(), t.share(), t.idealShare(),
                        t.idealShare() == 0 ? 0 : t.share() / t.idealShare(), gt, t.p50(), gt, t.p95(), t.idealP50(),
                        t.idealP95(), gt, t.p95() / Math.max(1e-9, t.idealP95()));
            }
            out.println();
            StringBuilder line = new StringBuilder("permits per second (a/b/c/d): ");
            for (int sec = 0; sec < a.perSecond().length; sec++) {
                int[] c = a.perSecond()[sec];
                line.append(sec == 0 ? "" : ", ").append(c[0]).append('/').append(c[1]).append('/').append(c[2]).append('/')
                        .append(c[3]);
            }
            out.println(line);
            out.println();
        }
    }

    /** @return per arm label: the figures the goals of issue 19 read */
    static Map<String, Arm> byLabel(List<Arm> arms) {
        Map<String, Arm> m = new LinkedHashMap<>();
        arms.forEach(a -> m.put(a.label(), a));
        return m;
    }

    static Map<String, Tenant> tenants(Arm a) {
        Map<String, Tenant> m = new HashMap<>();
        a.tenants().forEach(t -> m.put(t.name(), t));
        return m;
    }
}
