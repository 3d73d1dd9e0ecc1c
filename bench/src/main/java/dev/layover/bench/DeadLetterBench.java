package dev.layover.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.layover.core.JobType;
import dev.layover.core.Layover;
import dev.layover.dlq.BulkResult;
import dev.layover.dlq.DeadLetterFilter;
import dev.layover.dlq.DeadLetterPage;
import dev.layover.dlq.DeadLetterState;
import dev.layover.dlq.DeadLetters;
import dev.layover.dlq.ReplayOptions;
import dev.layover.dlq.Selection;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The dead-letter store at scale: 1,000,000 dead letters, filtered keyset pages (p50/p95/p99 over
 * 200 consecutive pages per filter shape, against OFFSET paging of the same pages), facet counts,
 * and replay by filter (100,000 jobs) against one-by-one replay. Prints markdown tables.
 *
 * <p>Usage: {@code DeadLetterBench [--jdbc-url URL] [--rows N] [--keep]}; the URL may also come from
 * {@code LAYOVER_JDBC_URL}, else an embedded Postgres (zonky) is started. On a given server it
 * creates a scratch database (the user needs CREATEDB) and drops it at the end, unless
 * {@code --keep} (to look at plans afterwards).
 */
public final class DeadLetterBench {

    private static final int PAGE = 50;
    private static final int PAGES = 200;

    record Work(String doc, String lang, String text) {}

    private DeadLetterBench() {}

    /**
     * @param args {@code --jdbc-url URL}, {@code --rows N} (default 1,000,000)
     * @throws Exception on failure
     */
    public static void main(String[] args) throws Exception {
        String url = System.getenv("LAYOVER_JDBC_URL");
        int rows = 1_000_000;
        boolean keep = Arrays.asList(args).contains("--keep");
        for (int i = 0; i < args.length - 1; i++) {
            if (args[i].equals("--jdbc-url")) {
                url = args[i + 1];
            } else if (args[i].equals("--rows")) {
                rows = Integer.parseInt(args[i + 1]);
            }
        }
        EmbeddedPostgres embedded = null;
        String description;
        if (url == null || url.isBlank()) {
            embedded = EmbeddedPostgres.builder().start();
            url = embedded.getJdbcUrl("postgres", "postgres");
            description = "embedded Postgres (zonky)";
        } else {
            description = url.replaceAll("password=[^&]*", "password=***");
        }
        String scratch = "layover_dlq_bench_" + ProcessHandle.current().pid();
        admin(url, "CREATE DATABASE " + scratch);
        try {
            run(withDatabase(url, scratch), description, rows);
        } finally {
            if (keep && embedded == null) {
                System.out.println("kept database " + scratch);
            } else {
                admin(url, "DROP DATABASE IF EXISTS " + scratch + " WITH (FORCE)");
            }
            if (embedded != null) {
                embedded.close();
            }
        }
        System.exit(0);
    }

    private static void run(String url, String description, int rows) throws Exception {
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(url);
        cfg.setMaximumPoolSize(8);
        cfg.setPoolName("dlq-bench");
        try (HikariDataSource ds = new HikariDataSource(cfg)) {
            JobType<?>[] types = Arrays.stream(new String[] {"translate", "summarize", "embed", "classify", "moderate"})
                    .map(n -> JobType.of(n, Work.class, (a, ctx) -> null)).toArray(JobType<?>[]::new);
            Layover layover = Layover.builder(ds).register(types).build();
            DeadLetters store = DeadLetters.create(layover);
            String server = scalar(ds, "show server_version");
            System.out.printf("Dead-letter store on %s (PostgreSQL %s), %d cores, Java %s%n%n", description, server,
                    Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"));

            long t0 = System.nanoTime();
            load(ds, rows);
            System.out.printf(Locale.ROOT, "Loaded %,d dead letters (with indexes and ANALYZE) in %.1f s; trigram index: %s%n%n",
                    rows, seconds(t0), scalar(ds, "select count(*) from pg_indexes where indexname = "
                            + "'dead_letters_error_text_idx'").equals("1") ? "yes" : "no (pg_trgm unavailable)");

            pages(ds, store);
            counts(store);
            replay(ds, store);
        }
    }

    // ------------------------------------------------------------------------------------ data

    /**
     * One INSERT ... SELECT generate_series, with the indexes dropped during the load and rebuilt
     * from their own definitions afterwards (a bulk build is several times faster than a million
     * index insertions). Skews: 5 job types, 8 provider keys, 10 failure types, states 60% replayed,
     * 25% parked, 10% discarded, 5% review; parked over the last 30 days.
     */
    static void load(javax.sql.DataSource ds, int rows) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("SET maintenance_work_mem = '512MB'");
            List<String> indexes = new ArrayList<>();
            try (ResultSet rs = st.executeQuery("""
                    SELECT indexname, indexdef FROM pg_indexes
                    WHERE schemaname = 'layover' AND tablename = 'dead_letters' AND indexname <> 'dead_letters_pkey'""")) {
                while (rs.next()) {
                    indexes.add(rs.getString(1) + "\u0000" + rs.getString(2));
                }
            }
            for (String i : indexes) {
                st.execute("DROP INDEX layover." + i.substring(0, i.indexOf('\u0000')));
            }
            try (var ps = c.prepareStatement("""
                    INSERT INTO layover.dead_letters
                        (job_type, job_id, args, provider_key, failure_type, error_class, error_message, errors,
                         attempts, reschedules, priority, first_enqueued_at, parked_at, park_count, state,
                         state_changed_at, replay_count)
                    SELECT jt, 'job-' || g, jsonb_build_object('doc', 'doc-' || g, 'lang', (ARRAY['fr','de','es','ja'])[1 + g % 4],
                               'text', repeat('lorem ipsum ', 5 + g % 20)),
                           pk, ft, ec, em,
                           jsonb_build_array(jsonb_build_object('attempt', 1, 'at', parked, 'kind', 'transient',
                               'error_class', ec, 'message', em)),
                           CASE WHEN ft IN ('provider_unavailable', 'job_error') THEN 5 ELSE 1 END,
                           CASE WHEN ft = 'rate_limit_exhausted' THEN 50 ELSE g % 3 END,
                           0, parked - interval '5 minutes', parked, 1 + (g % 50 = 0)::int, st,
                           parked + interval '1 minute', CASE WHEN st = 'replayed' THEN 1 ELSE 0 END
                    FROM (
                        SELECT g, parked,
                               CASE WHEN h1 < 40 THEN 'translate' WHEN h1 < 65 THEN 'summarize' WHEN h1 < 85 THEN 'embed'
                                    WHEN h1 < 95 THEN 'classify' ELSE 'moderate' END AS jt,
                               (ARRAY['openai:gpt-4o-mini','openai:gpt-4o-mini','openai:gpt-4o-mini','openai:gpt-4o',
                                      'openai:gpt-4o','anthropic:claude-sonnet','anthropic:claude-sonnet',
                                      'anthropic:claude-haiku','gemini:2.5-flash','gemini:2.5-flash',
                                      'bedrock:claude@us-east-1','azure:gpt-4o@westeurope','mistral:large'])[1 + h2 % 13] AS pk,
                               CASE WHEN h3 < 35 THEN 'provider_unavailable' WHEN h3 < 55 THEN 'rate_limit_exhausted'
                                    WHEN h3 < 65 THEN 'quota_exhausted' WHEN h3 < 75 THEN 'breaker_open'
                                    WHEN h3 < 85 THEN 'job_error' WHEN h3 < 93 THEN 'rejected'
                                    WHEN h3 < 97 THEN 'auth_refused' WHEN h3 < 98 THEN 'bad_args'
                                    ELSE 'handler_parked' END AS ft,
                               CASE WHEN h4 < 60 THEN 'replayed' WHEN h4 < 85 THEN 'parked'
                                    WHEN h4 < 95 THEN 'discarded' ELSE 'review' END AS st,
                               h5
                        FROM (
                            SELECT g, now() - (g::float8 / ? * interval '30 days') AS parked,
                                   (hashint4(g) & 2147483647) % 100 AS h1, (hashint4(g + 7919) & 2147483647) % 1000 AS h2,
                                   (hashint4(g + 104729) & 2147483647) % 100 AS h3, (hashint4(g + 1299709) & 2147483647) % 100 AS h4,
                                   (hashint4(g + 15485863) & 2147483647) % 1000 AS h5
                            FROM generate_series(1, ?) g
                        ) r
                    ) x
                    CROSS JOIN LATERAL (SELECT
                        CASE x.ft
                            WHEN 'provider_unavailable' THEN CASE WHEN h5 % 2 = 0 THEN 'java.net.SocketTimeoutException'
                                                                  ELSE 'Overloaded' END
                            WHEN 'rate_limit_exhausted' THEN 'RateLimited'
                            WHEN 'quota_exhausted' THEN 'QuotaExhausted'
                            WHEN 'breaker_open' THEN 'BreakerOpen'
                            WHEN 'job_error' THEN 'java.lang.NullPointerException'
                            WHEN 'rejected' THEN 'invalid_request_error'
                            WHEN 'auth_refused' THEN 'authentication_error'
                            WHEN 'bad_args' THEN 'com.fasterxml.jackson.databind.exc.MismatchedInputException'
                            ELSE 'HandlerParked' END AS ec,
                        CASE x.ft
                            WHEN 'provider_unavailable' THEN CASE WHEN h5 % 2 = 0
                                THEN 'Read timed out after 30000 ms calling ' || x.pk || ' (request req_' || md5(g::text) || ')'
                                ELSE 'HTTP 529 overloaded_error: Overloaded (request req_' || md5(g::text) || ') (attempt 5 of 5)' END
                            WHEN 'rate_limit_exhausted' THEN 'rescheduled 50 times (maxReschedules); last: 429 Rate limit reached for '
                                || x.pk || ' in organization org-' || (h5 % 40) || ' on requests per min (RPM): Limit 500'
                            WHEN 'quota_exhausted' THEN 'insufficient_quota: You exceeded your current quota, please check your plan and billing details (no known reset)'
                            WHEN 'breaker_open' THEN 'breaker of ' || x.pk || ' is open; not called'
                            WHEN 'job_error' THEN 'Cannot invoke "String.length()" because "text" is null at '
                                || initcap(x.jt) || 'Handler.java:' || (h5 % 500) || ' (attempt 5 of 5)'
                            WHEN 'rejected' THEN 'HTTP 400: max_tokens is too large: ' || (4096 + h5) || '. This model supports at most 4096 completion tokens'
                            WHEN 'auth_refused' THEN 'HTTP 401: Incorrect API key provided: sk-...' || substr(md5(h5::text), 1, 4)
                            WHEN 'bad_args' THEN 'stored args do not read as Work: Unrecognized field "colour"'
                            ELSE 'customer ' || (h5 * 7) || ' was deleted' END AS em
                    ) e""")) {
                ps.setInt(1, rows);
                ps.setInt(2, rows);
                ps.executeUpdate();
            }
            for (String i : indexes) {
                st.execute(i.substring(i.indexOf('\u0000') + 1));
            }
            st.execute("VACUUM ANALYZE layover.dead_letters");
        }
    }

    // ------------------------------------------------------------------------------------ pages

    private static void pages(HikariDataSource ds, DeadLetters store) throws Exception {
        Instant now = Instant.now();
        Map<String, DeadLetterFilter> shapes = new LinkedHashMap<>();
        DeadLetterFilter all = DeadLetterFilter.all();
        shapes.put("no filter", all);
        shapes.put("state = parked", all.withStates(DeadLetterState.PARKED));
        shapes.put("parked, provider = openai:gpt-4o-mini", all.withStates(DeadLetterState.PARKED)
                .withProviderKeys("openai:gpt-4o-mini"));
        shapes.put("job type = summarize, failure = job_error", all.withJobTypes("summarize").withFailureTypes("job_error"));
        shapes.put("review, failure = rate_limit_exhausted", all.withStates(DeadLetterState.REVIEW)
                .withFailureTypes("rate_limit_exhausted"));
        shapes.put("parked, translate, last 24 h", all.withStates(DeadLetterState.PARKED).withJobTypes("translate")
                .withParkedBetween(now.minus(Duration.ofDays(1)), null));
        shapes.put("parked or review, provider = mistral:large", all.withStates(DeadLetterState.PARKED,
                DeadLetterState.REVIEW).withProviderKeys("mistral:large"));
        shapes.put("text \"timed out\", parked", all.withText("timed out").withStates(DeadLetterState.PARKED));
        shapes.put("text \"organization org-17\"", all.withText("organization org-17"));
        shapes.put("text \"SummarizeHandler.java:42\" (rare)", all.withText("SummarizeHandler.java:42"));

        System.out.println("### Filtered keyset pages over the dead letters (" + PAGE + " per page, up to " + PAGES
                + " consecutive pages)");
        System.out.println();
        System.out.println("| filter | matching | pages | p50 ms | p95 ms | p99 ms | max ms |");
        System.out.println("|---|---:|---:|---:|---:|---:|---:|");
        for (Map.Entry<String, DeadLetterFilter> s : shapes.entrySet()) {
            walk(store, s.getValue(), 20);
            double[] ms = walk(store, s.getValue(), PAGES);
            System.out.printf(Locale.ROOT, "| %s | %,d | %d | %.2f | %.2f | %.2f | %.2f |%n", s.getKey(),
                    store.count(s.getValue()), ms.length, pct(ms, 50), pct(ms, 95), pct(ms, 99), pct(ms, 100));
        }
        System.out.println();

        System.out.println("### Keyset against OFFSET paging, same pages (page 1 to " + PAGES + ")");
        System.out.println();
        System.out.println("| filter | keyset p95 ms | OFFSET p95 ms | OFFSET p95 / keyset p95 |");
        System.out.println("|---|---:|---:|---:|");
        for (String name : List.of("state = parked", "parked, provider = openai:gpt-4o-mini")) {
            double[] keyset = walk(store, shapes.get(name), PAGES);
            double[] offset = offsetWalk(ds, name.equals("state = parked") ? "state = 'parked'"
                    : "state = 'parked' AND provider_key = 'openai:gpt-4o-mini'");
            System.out.printf(Locale.ROOT, "| %s | %.2f | %.2f | %.1f× |%n", name, pct(keyset, 95), pct(offset, 95),
                    pct(offset, 95) / pct(keyset, 95));
        }
        System.out.println();
    }

    /** Walks up to {@code pages} consecutive pages; returns each page's time in ms. */
    private static double[] walk(DeadLetters store, DeadLetterFilter f, int pages) {
        List<Double> out = new ArrayList<>();
        String cursor = null;
        do {
            long t = System.nanoTime();
            DeadLetterPage page = store.find(f, PAGE, cursor);
            out.add((System.nanoTime() - t) / 1e6);
            cursor = page.nextCursor();
        } while (cursor != null && out.size() < pages);
        return out.stream().mapToDouble(Double::doubleValue).toArray();
    }

    private static double[] offsetWalk(HikariDataSource ds, String where) throws Exception {
        double[] out = new double[PAGES];
        try (Connection c = ds.getConnection();
                var ps = c.prepareStatement("SELECT id, job_type, job_id, provider_key, failure_type, error_class, "
                        + "left(error_message, 1000), attempts, reschedules, park_count, state, parked_at, "
                        + "state_changed_at, replay_count FROM layover.dead_letters WHERE " + where
                        + " ORDER BY parked_at DESC, id DESC LIMIT " + PAGE + " OFFSET ?")) {
            for (int p = 0; p < PAGES; p++) {
                long t = System.nanoTime();
                ps.setInt(1, p * PAGE);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        rs.getLong(1);
                    }
                }
                out[p] = (System.nanoTime() - t) / 1e6;
            }
        }
        return out;
    }

    // ------------------------------------------------------------------------------------ counts

    private static void counts(DeadLetters store) {
        Map<String, DeadLetterFilter> shapes = new LinkedHashMap<>();
        shapes.put("no filter", DeadLetterFilter.all());
        shapes.put("state = parked", DeadLetterFilter.all().withStates(DeadLetterState.PARKED));
        shapes.put("provider = anthropic:claude-haiku", DeadLetterFilter.all().withProviderKeys("anthropic:claude-haiku"));
        System.out.println("### Facet counts (by state, failure type, job type, provider key; one scan)");
        System.out.println();
        System.out.println("| filter | matching | p50 ms | max ms (of 5) |");
        System.out.println("|---|---:|---:|---:|");
        for (Map.Entry<String, DeadLetterFilter> s : shapes.entrySet()) {
            double[] ms = new double[5];
            long total = 0;
            for (int i = 0; i < ms.length; i++) {
                long t = System.nanoTime();
                total = store.counts(s.getValue()).total();
                ms[i] = (System.nanoTime() - t) / 1e6;
            }
            System.out.printf(Locale.ROOT, "| %s | %,d | %.0f | %.0f |%n", s.getKey(), total, pct(ms, 50), pct(ms, 100));
        }
        System.out.println();
    }

    // ------------------------------------------------------------------------------------ replay

    private static void replay(HikariDataSource ds, DeadLetters store) throws Exception {
        DeadLetterFilter auto = DeadLetterFilter.all().withStates(DeadLetterState.PARKED)
                .withFailureTypes("provider_unavailable", "breaker_open", "rate_limit_exhausted", "quota_exhausted");
        long matching = store.count(auto);
        int oneByOne = 2_000;
        int bulk = (int) Math.min(100_000, matching - oneByOne);

        // one by one: the console's single replay, one transaction each
        List<Long> ids = new ArrayList<>();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT id FROM layover.dead_letters WHERE state = 'parked' "
                        + "AND failure_type IN ('provider_unavailable','breaker_open','rate_limit_exhausted','quota_exhausted') "
                        + "ORDER BY id DESC LIMIT " + oneByOne)) {
            while (rs.next()) {
                ids.add(rs.getLong(1));
            }
        }
        long t = System.nanoTime();
        for (long id : ids) {
            store.replay(id, ReplayOptions.by("bench"));
        }
        double singleRate = ids.size() / seconds(t);

        long[] lastReport = {System.nanoTime()};
        t = System.nanoTime();
        BulkResult r = store.replay(Selection.matching(auto), ReplayOptions.by("bench").limit(bulk)
                .onProgress(p -> {
                    if (System.nanoTime() - lastReport[0] > 5_000_000_000L) {
                        lastReport[0] = System.nanoTime();
                        System.out.printf(Locale.ROOT, "  ... %,d replayed%n", p.changed());
                    }
                }));
        double bulkSeconds = seconds(t);
        double bulkRate = r.changed() / bulkSeconds;

        System.out.println("### Replay of parked dead letters with an auto-replayable failure type (" + String.format(
                Locale.ROOT, "%,d", matching) + " matching)");
        System.out.println();
        System.out.println("| how | replayed | seconds | jobs/s |");
        System.out.println("|---|---:|---:|---:|");
        System.out.printf(Locale.ROOT, "| one by one, `replay(id)` | %,d | %.1f | %,.0f |%n", ids.size(),
                ids.size() / singleRate, singleRate);
        System.out.printf(Locale.ROOT, "| by filter, %d per transaction | %,d | %.1f | %,.0f |%n",
                ReplayOptions.DEFAULT_BATCH_SIZE, r.changed(), bulkSeconds, bulkRate);
        System.out.printf(Locale.ROOT, "%nbulk / one by one: %.1f×; jobs in layover.jobs: %s%n", bulkRate / singleRate,
                scalar(ds, "select count(*) from layover.jobs"));
    }

    // ------------------------------------------------------------------------------------ helpers

    private static double pct(double[] values, int p) {
        double[] v = values.clone();
        Arrays.sort(v);
        int i = (int) Math.ceil(p / 100.0 * v.length) - 1;
        return v[Math.max(0, Math.min(v.length - 1, i))];
    }

    private static double seconds(long startNanos) {
        return (System.nanoTime() - startNanos) / 1e9;
    }

    private static String scalar(HikariDataSource ds, String sql) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }

    private static void admin(String url, String sql) throws Exception {
        try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    /** The same JDBC URL pointing at another database. */
    private static String withDatabase(String url, String database) {
        return url.replaceFirst("^(jdbc:postgresql://[^/?]*)(/[^?]*)?", "$1/" + database);
    }
}
