package dev.layover.bench;

import dev.layover.core.EnqueueOptions;
import dev.layover.core.Enqueued;
import dev.layover.core.GroupOptions;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.core.outcome.Outcome;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * Groups and dependencies (issue 46), each arm in a scratch database of its own, run by two
 * Layover instances of 8 threads in this JVM with no-op handlers and Layover's other defaults:
 * <ul>
 *   <li>{@code plain}: the members of the largest arm as plain jobs ({@code enqueueBatch}), the
 *       baseline;
 *   <li>{@code groups G x M}: G groups of M members each ({@code enqueueGroup}), each with a no-op
 *       callback;
 *   <li>{@code chain}: 100 jobs, each enqueued to run after the one before;
 *   <li>the kill arm (skipped with {@code --no-kill}): 50 groups of 200 members of 5 ms on two
 *       worker JVMs ({@link GroupsWorker}), the first killed (kill -9) with 40 % of the members
 *       done; every callback must complete exactly once.
 * </ul>
 * Everything is enqueued before the workers start. Reported: members per second from the first
 * member's start to the last member's end (history), job-table writes per member
 * ({@code pg_stat_user_tables}: {@code scheduled_tasks}, {@code group_members}, {@code groups},
 * {@code job_dependencies}, enqueue included), the time from a group's last member's end
 * ({@code group_members.finished_at}) to its callback's start, and a chain edge's time from a
 * job's end to the next one's start.
 *
 * <p>Run: {@code ./mvnw -q -pl bench -am -DskipTests package exec:java
 * -Dlayover.bench.main=dev.layover.bench.GroupsBench -Dexec.args="--jdbc-url URL [--quick] [--no-kill | --kill-only]"}.
 */
public final class GroupsBench {

    /** A member's (or plain job's) args. */
    public record Member(int group, int n) {}

    /** A callback's args. */
    public record Assemble(int group) {}

    private static final int THREADS = 8;

    private GroupsBench() {}

    /**
     * One arm's figures.
     *
     * @param arm the arm's name
     * @param members member (or plain) jobs
     * @param perSecond members per second, first start to last end
     * @param writesPerMember job-table writes per member, enqueue included
     * @param callbackP50Ms median from a group's last member's end to its callback's start (NaN: none)
     * @param callbackP95Ms 95th percentile of the same
     * @param callbacks callbacks that ran (each group's exactly once)
     */
    public record Arm(String arm, int members, double perSecond, double writesPerMember, double callbackP50Ms,
            double callbackP95Ms, long callbacks) {}

    public static void main(String[] args) throws Exception {
        boolean quick = List.of(args).contains("--quick");
        if (List.of(args).contains("--kill-only")) {
            Kill k = kill(args, quick ? 10 : 50, quick ? 50 : 200, 5);
            print(k);
            return;
        }
        int largeMembers = quick ? 500 : 5_000;
        List<Arm> arms = new ArrayList<>();
        arms.add(plain(args, 20 * largeMembers));
        arms.add(groups(args, 500, 20));
        arms.add(groups(args, 20, largeMembers));
        double[] chain = chain(args, 100);
        Kill kill = List.of(args).contains("--no-kill") ? null : kill(args, quick ? 10 : 50, quick ? 50 : 200, 5);
        String[] load = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).split(" ");
        System.out.printf(Locale.ROOT, "## Groups and dependencies (issue 46)%n%nload average at the end: %s %s %s%n%n",
                load[0], load[1], load[2]);
        System.out.println("| arm | members | members/s | vs plain | job-table writes per member | added vs plain |"
                + " last member's end → callback's start, p50 / p95 | callbacks |");
        System.out.println("|---|---|---|---|---|---|---|---|");
        Arm base = arms.get(0);
        for (Arm a : arms) {
            System.out.printf(Locale.ROOT, "| %s | %,d | %,.0f | %.2f | %.2f | %+.2f | %s | %d |%n", a.arm(), a.members(),
                    a.perSecond(), a.perSecond() / base.perSecond(), a.writesPerMember(),
                    a.writesPerMember() - base.writesPerMember(),
                    Double.isNaN(a.callbackP50Ms()) ? "-" : String.format(Locale.ROOT, "%.0f / %.0f ms", a.callbackP50Ms(),
                            a.callbackP95Ms()), a.callbacks());
        }
        System.out.printf(Locale.ROOT, "%nA chain of 100 jobs, each after the one before: a job's end to the next one's"
                + " start p50 %.0f ms, p95 %.0f ms, max %.0f ms; the chain in %.1f s.%n", chain[0], chain[1], chain[2], chain[3]);
        System.out.println("\nTwo Layover instances of " + THREADS + " threads in one JVM, no-op handlers, Layover's"
                + " defaults otherwise (poll interval 1 s); everything enqueued before the workers start.");
        if (kill != null) {
            print(kill);
        }
    }

    private static JobType<Member> memberType() {
        return JobType.of("bench-member", Member.class, (m, ctx) -> Outcome.done());
    }

    private static JobType<Assemble> callbackType() {
        return JobType.of("bench-callback", Assemble.class, (a, ctx) -> Outcome.done());
    }

    private static Arm plain(String[] args, int n) throws Exception {
        try (BenchDatabase db = BenchDatabase.open(args, 6, "_plain")) {
            JobType<Member> member = memberType();
            List<Layover> workers = workers(db, member, callbackType());
            long before = writes(db.dataSource());
            List<Member> batch = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                batch.add(new Member(0, i));
                if (batch.size() == 1_000) {
                    workers.get(0).enqueueBatch(member, batch);
                    batch.clear();
                }
            }
            if (!batch.isEmpty()) {
                workers.get(0).enqueueBatch(member, batch);
            }
            double perSecond = runAll(db.dataSource(), workers, n);
            return new Arm("plain", n, perSecond, (writes(db.dataSource()) - before) / (double) n, Double.NaN,
                    Double.NaN, 0);
        }
    }

    private static Arm groups(String[] args, int groups, int members) throws Exception {
        try (BenchDatabase db = BenchDatabase.open(args, 6, "_g" + groups)) {
            JobType<Member> member = memberType();
            JobType<Assemble> callback = callbackType();
            List<Layover> workers = workers(db, member, callback);
            long before = writes(db.dataSource());
            for (int g = 0; g < groups; g++) {
                List<Member> ms = new ArrayList<>(members);
                for (int i = 0; i < members; i++) {
                    ms.add(new Member(g, i));
                }
                workers.get(0).enqueueGroup(GroupOptions.callback(callback, new Assemble(g)), member, ms);
            }
            int n = groups * members;
            double perSecond = runAll(db.dataSource(), workers, n + groups);
            double writesPerMember = (writes(db.dataSource()) - before) / (double) n;
            double[] lat = percentiles(db.dataSource(), "select extract(epoch from h.started_at - m.last) * 1000 from"
                    + " (select group_id, max(finished_at) last from layover.group_members group by 1) m"
                    + " join layover.job_history h on h.job_id = m.group_id and h.job_type = 'bench-callback'");
            long callbacks = BenchDatabase.count(db.dataSource(),
                    "select count(*) from layover.job_history where job_type = 'bench-callback'");
            return new Arm("groups " + groups + " × " + members, n, perSecond, writesPerMember, lat[0], lat[1], callbacks);
        }
    }

    /**
     * The kill arm's figures.
     *
     * @param groups groups
     * @param members members per group
     * @param memberMs a member's time
     * @param killedAt seconds from the workers' start to the kill
     * @param doneAtKill members done when the first worker was killed
     * @param seconds from the workers' start to the last callback's end
     * @param completed callbacks completed (history)
     * @param missing groups whose callback did not complete
     * @param twice groups whose callback completed more than once
     * @param runs callback handler runs (a run cut by the kill runs again elsewhere)
     * @param runsOnKilled of them, on the killed worker
     * @param p50 last member's end to its callback's start, median (ms)
     * @param p95 the same, 95th percentile
     */
    record Kill(int groups, int members, long memberMs, double killedAt, long doneAtKill, double seconds, long completed,
            long missing, long twice, long runs, long runsOnKilled, double p50, double p95) {}

    /**
     * Groups run by two worker JVMs ({@link GroupsWorker}), the first killed (kill -9) when 40 % of
     * the members are done; the other finishes. Every group's callback must complete exactly once.
     */
    private static Kill kill(String[] args, int groups, int members, long memberMs) throws Exception {
        try (BenchDatabase db = BenchDatabase.open(args, 6, "_kill")) {
            JobType<Member> member = GroupsWorker.member(0);
            JobType<Assemble> callback = callbackType();
            Layover client = Layover.builder(db.dataSource()).register(member).register(callback).build(); // migrates
            ThroughputBench.exec(db.dataSource(), "create table public.bench_callback_runs (group_no int, worker text)");
            for (int g = 0; g < groups; g++) {
                List<Member> ms = new ArrayList<>(members);
                for (int i = 0; i < members; i++) {
                    ms.add(new Member(g, i));
                }
                client.enqueueGroup(GroupOptions.callback(callback, new Assemble(g)), member, ms);
            }
            List<dev.layover.testing.JvmProcess> workers = new ArrayList<>();
            try {
                for (String name : List.of("groups-kill-a", "groups-kill-b")) {
                    workers.add(dev.layover.testing.JvmProcess.start(GroupsWorker.class, name, List.of("-Xmx256m"),
                            List.of(db.jdbcUrl(), name, String.valueOf(THREADS), String.valueOf(memberMs))));
                }
                for (dev.layover.testing.JvmProcess w : workers) {
                    w.awaitOutput("ready", Duration.ofSeconds(120));
                }
                long t0 = System.nanoTime();
                int n = groups * members;
                String done = "select count(*) from layover.job_history where job_type = 'bench-member'";
                while (BenchDatabase.count(db.dataSource(), done) < 0.4 * n) {
                    Thread.sleep(50); // a bench's poll of its own progress
                }
                long doneAtKill = BenchDatabase.count(db.dataSource(), done);
                workers.get(0).kill();
                double killedAt = (System.nanoTime() - t0) / 1e9;
                long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
                String callbacks = "select count(*) from layover.job_history where job_type = 'bench-callback'";
                while (BenchDatabase.count(db.dataSource(), callbacks) < groups) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("callbacks not done in 10 minutes: "
                                + BenchDatabase.count(db.dataSource(), callbacks) + " of " + groups);
                    }
                    Thread.sleep(200); // a bench's poll of its own progress
                }
                double seconds = (System.nanoTime() - t0) / 1e9;
                Thread.sleep(3_000); // a second completion of a callback would come within the dead-worker timeout (2 s)
                DataSource ds = db.dataSource();
                double[] lat = percentiles(ds, "select extract(epoch from h.started_at - m.last) * 1000 from"
                        + " (select group_id, max(finished_at) last from layover.group_members group by 1) m"
                        + " join layover.job_history h on h.job_id = m.group_id and h.job_type = 'bench-callback'");
                return new Kill(groups, members, memberMs, killedAt, doneAtKill, seconds,
                        BenchDatabase.count(ds, callbacks),
                        BenchDatabase.count(ds, "select count(*) from layover.groups g where not exists (select 1 from"
                                + " layover.job_history h where h.job_type = 'bench-callback' and h.job_id = g.id)"),
                        BenchDatabase.count(ds, "select count(*) from (select job_id from layover.job_history where"
                                + " job_type = 'bench-callback' group by 1 having count(*) > 1) x"),
                        BenchDatabase.count(ds, "select count(*) from public.bench_callback_runs"),
                        BenchDatabase.count(ds, "select count(*) from public.bench_callback_runs where worker = 'groups-kill-a'"),
                        lat[0], lat[1]);
            } finally {
                for (dev.layover.testing.JvmProcess w : workers) {
                    w.close();
                }
            }
        }
    }

    private static void print(Kill k) {
        System.out.printf(Locale.ROOT, "%n%d groups × %d members (%d ms each) on 2 worker JVMs of %d threads, the first"
                + " killed (kill -9) %.1f s in, with %,d of %,d members done: all done in %.1f s; callbacks completed"
                + " %d (groups with none %d, with more than one %d); callback handler runs %d (on the killed worker"
                + " %d); last member's end → callback's start p50 %.0f ms, p95 %.0f ms.%n", k.groups(), k.members(),
                k.memberMs(), THREADS, k.killedAt(), k.doneAtKill(), k.groups() * k.members(),
                k.seconds(), k.completed(), k.missing(), k.twice(), k.runs(), k.runsOnKilled(),
                k.p50(), k.p95());
    }

    /** @return p50, p95, max of the end-to-start time of each edge (ms), and the chain's seconds */
    private static double[] chain(String[] args, int n) throws Exception {
        try (BenchDatabase db = BenchDatabase.open(args, 6, "_chain")) {
            JobType<Member> member = memberType();
            List<Layover> workers = workers(db, member, callbackType());
            Enqueued prev = workers.get(0).enqueue(member, new Member(0, 0));
            for (int i = 1; i < n; i++) {
                prev = workers.get(0).enqueue(member, new Member(0, i), EnqueueOptions.now().withAfter(prev));
            }
            long t0 = System.nanoTime();
            runAll(db.dataSource(), workers, n);
            double seconds = (System.nanoTime() - t0) / 1e9;
            double[] p = percentiles(db.dataSource(), "select extract(epoch from b.started_at - a.finished_at) * 1000"
                    + " from layover.job_history a join layover.job_history b"
                    + " on (b.args->>'n')::int = (a.args->>'n')::int + 1");
            return new double[] {p[0], p[1], p[2], seconds};
        }
    }

    private static List<Layover> workers(BenchDatabase db, JobType<Member> member, JobType<Assemble> callback) {
        List<Layover> out = new ArrayList<>();
        for (String name : List.of("groups-a", "groups-b")) {
            com.zaxxer.hikari.HikariConfig cfg = new com.zaxxer.hikari.HikariConfig();
            cfg.setJdbcUrl(db.jdbcUrl());
            cfg.setMaximumPoolSize(THREADS + 6);
            cfg.setPoolName(name);
            out.add(Layover.builder(new com.zaxxer.hikari.HikariDataSource(cfg)).register(member).register(callback)
                    .threads(THREADS).workerName(name).historyArgs(true).build()); // the first build migrates
        }
        return out;
    }

    /** Starts the workers, waits for {@code n} history rows, stops them; @return members per second */
    private static double runAll(DataSource ds, List<Layover> workers, int n) throws Exception {
        workers.forEach(Layover::start);
        long deadline = System.nanoTime() + Duration.ofMinutes(20).toNanos();
        while (BenchDatabase.count(ds, "select count(*) from layover.job_history") < n) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("not done in 20 minutes");
            }
            Thread.sleep(200); // a bench's poll of its own progress
        }
        workers.forEach(Layover::stop);
        Thread.sleep(1_500); // the workers' backends flush their table statistics at most every second
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select count(*), extract(epoch from max(finished_at) - min(started_at))"
                        + " from layover.job_history where job_type = 'bench-member'")) {
            rs.next();
            return rs.getLong(1) / rs.getDouble(2);
        }
    }

    private static long writes(DataSource ds) throws Exception {
        return BenchDatabase.count(ds, "select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) from pg_stat_user_tables"
                + " where schemaname = 'layover' and relname in ('scheduled_tasks', 'group_members', 'groups', 'job_dependencies')");
    }

    /** @return p50, p95 and max of the one-column query's values */
    private static double[] percentiles(DataSource ds, String values) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("select percentile_cont(0.5) within group (order by v),"
                        + " percentile_cont(0.95) within group (order by v), max(v) from (" + values + ") x(v)")) {
            rs.next();
            return new double[] {rs.getDouble(1), rs.getDouble(2), rs.getDouble(3)};
        }
    }
}
