package dev.layover.bench;

import dev.layover.console.ConsoleOptions;
import dev.layover.console.ReplayConsole;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.sql.DataSource;

/**
 * The console's speed goal of issue 21: every page's API call p95 under 50 ms with 1,000,000 dead
 * letters and 10,000,000 history rows. Two arms on the bench database, one after the other: 1% of
 * the rows, then all of them (the tables emptied between), each with 7 days of time series (13
 * keys), 10,000 queued jobs and a breaker per key; the same calls against each (sequential, over
 * HTTP on loopback, as the pages make them; 5 warm-up calls, then 40 timed), printed as p50/p95
 * of both with the ratio of the p95s. {@code --quick}: 10,000 dead letters and 100,000 history
 * rows.
 */
final class ConsoleBench {

    private static final int WARM_UP = 5;
    private static final int CALLS = 40;
    private static final String TOKEN = "console-bench-token-0123456789";

    private ConsoleBench() {}

    /** One call's latencies on one arm. */
    record Timing(double p50, double p95, int status) {}

    /**
     * What one run measured.
     *
     * @param deadLetters the large arm's dead letters
     * @param history the large arm's history rows
     * @param small timings at 1% of the rows, by call
     * @param large timings at all the rows, by call
     */
    record Result(int deadLetters, int history, Map<String, Timing> small, Map<String, Timing> large) {

        /** @return how many calls of the large arm have p95 under 50 ms (and answered 200) */
        long met() {
            return large.values().stream().filter(t -> t.p95() < 50 && t.status() == 200).count();
        }
    }

    static Result measure(DataSource ds, boolean quick, PrintStream log) throws Exception {
        int deadLetters = quick ? 10_000 : 1_000_000;
        int history = quick ? 100_000 : 10_000_000;
        Map<String, Timing> small = arm(ds, "1%", deadLetters / 100, history / 100, log);
        Map<String, Timing> large = arm(ds, "all", deadLetters, history, log);
        return new Result(deadLetters, history, small, large);
    }

    private static Map<String, Timing> arm(DataSource ds, String name, int deadLetters, int history, PrintStream log)
            throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("TRUNCATE layover.dead_letters, layover.job_history, layover.time_series_counts, layover.breakers");
            st.execute("DELETE FROM layover.scheduled_tasks WHERE task_name NOT LIKE 'layover-%'");
        }
        long t0 = System.nanoTime();
        DeadLetterBench.load(ds, deadLetters);
        loadHistory(ds, history);
        loadRest(ds);
        log.printf(Locale.ROOT, "console arm %s: %,d dead letters, %,d history rows loaded in %.0f s%n", name, deadLetters,
                history, (System.nanoTime() - t0) / 1e9);
        try (ReplayConsole console = ReplayConsole.start(ds, ConsoleOptions.defaults().withToken(TOKEN))) {
            long parked = Long.parseLong(scalar(ds, "SELECT min(id) FROM layover.dead_letters WHERE state = 'parked'"));
            Map<String, Timing> out = new LinkedHashMap<>();
            for (Map.Entry<String, String> call : calls(parked, history).entrySet()) {
                out.put(call.getKey(), time(console.url(), call.getValue()));
            }
            return out;
        }
    }

    private static Map<String, String> calls(long deadLetter, int history) {
        Map<String, String> c = new LinkedHashMap<>();
        c.put("overview", "api/overview");
        c.put("dead letters, first page", "api/dead-letters?limit=50");
        c.put("dead letters, parked + key", "api/dead-letters?state=parked&providerKey=openai%3Agpt-4o&limit=50");
        c.put("dead letters, text", "api/dead-letters?text=timed%20out&limit=50");
        c.put("dead-letter facets", "api/dead-letters/facets?state=parked");
        c.put("bulk preview (count)", "api/dead-letters/preview?state=parked&failureType=provider_unavailable");
        c.put("one dead letter", "api/dead-letters/" + deadLetter);
        c.put("jobs waiting", "api/jobs?limit=50");
        c.put("breakers", "api/breakers");
        c.put("audit", "api/audit");
        c.put("history, first page", "api/history?limit=50");
        c.put("history, search job id", "api/history?q=job-" + (history / 2));
        c.put("history, parked + key + 1 h", "api/history?outcome=parked&providerKey=openai%3Agpt-4o");
        c.put("one job's runs", "api/job-runs/translate/job-" + (history / 2));
        c.put("provider key page", "api/provider-keys/openai%3Agpt-4o");
        c.put("time series, 1 h per 10 s", "api/time-series?resolution=10s&minutes=60");
        c.put("chart, 7 days, one key", "api/time-series/limits.svg?resolution=1h&minutes=10080&providerKey=openai%3Agpt-4o");
        c.put("chart, 24 h, all keys", "api/time-series/throughput.svg?resolution=1m&minutes=1440");
        return c;
    }

    private static Timing time(URI base, String path) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        HttpRequest req = HttpRequest.newBuilder(base.resolve(path)).header("Authorization", "Bearer " + TOKEN).GET().build();
        int status = 0;
        for (int i = 0; i < WARM_UP; i++) {
            status = http.send(req, HttpResponse.BodyHandlers.discarding()).statusCode();
        }
        double[] ms = new double[CALLS];
        for (int i = 0; i < CALLS; i++) {
            long t = System.nanoTime();
            HttpResponse<byte[]> r = http.send(req, HttpResponse.BodyHandlers.ofByteArray());
            ms[i] = (System.nanoTime() - t) / 1e6;
            status = r.statusCode();
        }
        Arrays.sort(ms);
        return new Timing(ms[CALLS / 2], ms[(int) Math.ceil(CALLS * 0.95) - 1], status);
    }

    static void print(PrintStream out, Result r) {
        out.printf(Locale.ROOT, "### Console API: %,d dead letters and %,d history rows, against 1%% of them "
                + "(%d calls each after %d warm-up, sequential, loopback HTTP)%n%n", r.deadLetters(), r.history(), CALLS, WARM_UP);
        out.println("| call | p50 ms (1%) | p95 ms (1%) | p50 ms | p95 ms | p95 ratio | p95 < 50 ms |");
        out.println("|---|---:|---:|---:|---:|---:|---|");
        for (Map.Entry<String, Timing> e : r.large().entrySet()) {
            Timing s = r.small().get(e.getKey());
            Timing l = e.getValue();
            boolean ok = l.p95() < 50 && l.status() == 200;
            out.printf(Locale.ROOT, "| %s | %.1f | %.1f | %.1f | %.1f | %.2f× | %s |%n", e.getKey(), s.p50(), s.p95(),
                    l.p50(), l.p95(), l.p95() / s.p95(),
                    ok ? "yes" : "**no**" + (l.status() != 200 ? " (HTTP " + l.status() + ")" : ""));
        }
        out.printf(Locale.ROOT, "%n%d of %d calls meet the goal.%n%n", r.met(), r.large().size());
    }

    // ------------------------------------------------------------------------------------ data

    /**
     * Finished jobs over the last 7 days, newest last: 5 job types, 13 provider keys, 95% completed,
     * 4% parked, 1% cancelled; indexes dropped during the load and rebuilt after.
     */
    private static void loadHistory(DataSource ds, int rows) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("SET maintenance_work_mem = '512MB'");
            List<String> indexes = new ArrayList<>();
            try (ResultSet rs = st.executeQuery(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'layover' AND tablename = 'job_history'")) {
                while (rs.next()) {
                    indexes.add(rs.getString(1) + "\u0000" + rs.getString(2));
                }
            }
            for (String i : indexes) {
                st.execute("DROP INDEX layover." + i.substring(0, i.indexOf('\u0000')));
            }
            try (var ps = c.prepareStatement("""
                    INSERT INTO layover.job_history
                        (job_type, job_id, outcome, failure_type, detail, attempts, reschedules, provider_key, worker,
                         enqueued_at, started_at, finished_at, duration_ms)
                    SELECT (ARRAY['translate','translate','summarize','embed','classify'])[1 + h % 5], 'job-' || g, oc,
                           CASE WHEN oc = 'parked' THEN 'provider_unavailable' END,
                           CASE WHEN oc = 'parked' THEN 'HTTP 503 upstream connect error (attempt 5 of 5)' END,
                           h % 3, h % 4,
                           (ARRAY['openai:gpt-4o-mini','openai:gpt-4o','anthropic:claude-sonnet','anthropic:claude-haiku',
                                  'gemini:2.5-flash','bedrock:claude@us-east-1','azure:gpt-4o@westeurope','mistral:large',
                                  'openai:o3','openai:gpt-4.1','anthropic:claude-opus','gemini:2.5-pro','cohere:command'])[1 + (h / 7) % 13],
                           'worker-' || (h % 8), fin - interval '3 seconds', fin - interval '1 second', fin, 200 + h % 1000
                    FROM (
                        SELECT g, h, now() - ((? - g)::float8 / ? * interval '7 days') AS fin,
                               CASE WHEN h % 100 < 95 THEN 'completed' WHEN h % 100 < 99 THEN 'parked' ELSE 'cancelled' END AS oc
                        FROM (SELECT g, hashint4(g) & 2147483647 AS h FROM generate_series(1, ?) g) r
                    ) x""")) {
                ps.setInt(1, rows);
                ps.setInt(2, rows);
                ps.setInt(3, rows);
                ps.executeUpdate();
            }
            for (String i : indexes) {
                st.execute(i.substring(i.indexOf('\u0000') + 1));
            }
            st.execute("VACUUM ANALYZE layover.job_history");
        }
    }

    /** 10,000 queued jobs, a breaker per key, and 7 days of time series (minute rows) plus the last hour at 10 s. */
    private static void loadRest(DataSource ds) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("""
                    INSERT INTO layover.scheduled_tasks (task_name, task_instance, task_data, execution_time, picked, version,
                        priority, consecutive_failures, provider_key)
                    SELECT 'translate', 'queued-' || g, convert_to('{"doc": "d-' || g || '"}', 'UTF8'),
                           now() + (g % 600) * interval '1 second', false, 1, 0, 0,
                           (ARRAY['openai:gpt-4o-mini','openai:gpt-4o','anthropic:claude-sonnet'])[1 + g % 3]
                    FROM generate_series(1, 10000) g""");
            st.execute("""
                    INSERT INTO layover.breakers (provider_key)
                    SELECT DISTINCT provider_key FROM layover.dead_letters ON CONFLICT DO NOTHING""");
            st.execute("""
                    INSERT INTO layover.time_series_counts (bucket_seconds, bucket, job_type, provider_key, counter, detail, amount)
                    SELECT s.sec, to_timestamp(floor(extract(epoch FROM now()) / s.sec) * s.sec) - b * s.sec * interval '1 second',
                           'translate', k, c.counter, c.detail, 1 + (b % 50)
                    FROM (VALUES (3600, 168), (60, 10080), (10, 360)) s(sec, n)
                    CROSS JOIN LATERAL generate_series(0, s.n - 1) b
                    CROSS JOIN unnest(ARRAY['openai:gpt-4o-mini','openai:gpt-4o','anthropic:claude-sonnet','anthropic:claude-haiku',
                               'gemini:2.5-flash','bedrock:claude@us-east-1','azure:gpt-4o@westeurope','mistral:large',
                               'openai:o3','openai:gpt-4.1','anthropic:claude-opus','gemini:2.5-pro','cohere:command']) k
                    CROSS JOIN (VALUES ('completed', ''), ('rate_limited', ''), ('rescheduled', 'rate_limited'),
                               ('retried', 'transient'), ('due', '')) c(counter, detail)""");
            st.execute("VACUUM ANALYZE layover.time_series_counts");
            st.execute("ANALYZE layover.scheduled_tasks");
        }
    }

    private static String scalar(DataSource ds, String sql) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }
}
