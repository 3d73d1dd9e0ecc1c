package dev.layover.architecture;

import static dev.layover.architecture.ReactorSources.reactorRoot;
import static dev.layover.architecture.ReactorSources.read;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * One owner per table: every statement that writes a table of the {@code layover} schema
 * ({@code INSERT INTO}, {@code UPDATE}, {@code DELETE FROM}, {@code TRUNCATE}) sits in one of the
 * writer units docs/architecture.md names as that table's owner. A unit is a Java file under
 * {@code src/main/java}, a SQL file under {@code src/main/resources} (core's named statements), or
 * a function the migrations define ({@code function layover.pick}: its body, trigger functions
 * too). A statement of one owner that needs a write of another owner's table calls that owner's
 * function. The benchmark harnesses are the one exception.
 */
@PureTest
class TableOwnersTest {

    private static final String CORE = "core/src/main/java/dev/layover/core/";
    private static final String CORE_SQL = "core/src/main/resources/dev/layover/core/sql/";
    private static final String DLQ = "dlq/src/main/java/dev/layover/dlq/";

    private static String function(String name) {
        return "function layover." + name;
    }

    /** The job store: core's job statements and the functions that write job rows for others. */
    private static final Set<String> JOB_STORE = Set.of(
            CORE + "internal/jobs/JobSql.java",
            CORE_SQL + "job_insert.sql",
            CORE_SQL + "job_insert_batch.sql",
            CORE_SQL + "job_park.sql",
            CORE_SQL + "job_done.sql",
            CORE_SQL + "job_done_history.sql",
            // the engine's pick is the admission: it takes the jobs its keys admit
            function("pick"),
            // the job rows of batches, for the batch_* functions
            function("jobs_batched"),
            function("jobs_wake_batched"),
            // forgetting a job type (demos, tests): its live jobs and dead letters
            function("forget_job_type"),
            // the SQL enqueue (other languages): the insert job_insert.sql makes
            function("enqueue"),
            // a waiting job made due: a group's callback, a dependent, a job waiting for a signal
            function("job_make_due"),
            // a group's callback deleted when its group settles skipped (policy on_success)
            function("group_settle"),
            // a dependent parked dependency_failed when a job it runs after is discarded
            function("dependencies_failed"));

    /** The owner of each table: the units whose SQL may write it. */
    private static final Map<String, Set<String>> OWNERS = Map.ofEntries(
            Map.entry("scheduled_tasks", JOB_STORE),
            // the park is a move: the job store's one statement writes the dead letter it moves the job into
            Map.entry("dead_letters", Set.of(CORE + "internal/jobs/JobSql.java", CORE_SQL + "job_park.sql", function("forget_job_type"),
                    DLQ + "DlqSql.java",
                    // a dependent parked dependency_failed is a move, as the park: the job store's function
                    function("dependencies_failed"))),
            Map.entry("job_history", Set.of(CORE + "internal/jobs/JobSql.java", CORE_SQL + "job_park.sql", CORE_SQL + "job_done_history.sql",
                    CORE + "history/JobHistoryRetention.java")),
            Map.entry("database_returns", Set.of(function("database_returned"))),
            Map.entry("breakers", Set.of(CORE + "internal/gate/StateSql.java", function("claim_trials"),
                    function("forget_provider_keys"))),
            Map.entry("cooldowns", Set.of(CORE + "internal/gate/StateSql.java", function("forget_provider_keys"))),
            Map.entry("buckets", Set.of(CORE + "internal/gate/StateSql.java", CORE + "internal/gate/TokenSql.java",
                    CORE_SQL + "bucket_configure.sql", function("take"), function("limit_rows"),
                    function("forget_provider_keys"),
                    // co-owner: the pick writes the permits and tokens its admissions spend in the statement
                    // that takes the jobs (one statement per pick; the gate's take is one call of one key)
                    function("pick"))),
            Map.entry("concurrency_limits", Set.of(function("configure_concurrency"), function("limit_rows"))),
            // the pick's fair queues: each priority's clock, the low share's credit
            Map.entry("fair_lines", Set.of(function("pick"))),
            Map.entry("fairness_weights", Set.of(CORE + "internal/gate/FairSql.java")),
            Map.entry("limit_overrides", Set.of(CORE + "internal/gate/OverrideSql.java")),
            Map.entry("pauses", Set.of(CORE + "internal/engine/ControlSql.java")),
            // co-owner: forgetting a provider key (demos, tests) forgets the recovery sweep's state of it too
            Map.entry("recovery_state", Set.of(DLQ + "DlqSql.java", function("forget_provider_keys"))),
            Map.entry("audit_log", Set.of(DLQ + "DlqSql.java")),
            // each running instance's row: its start, heartbeat and stop
            Map.entry("workers", Set.of(CORE + "internal/observe/WorkerSql.java", function("worker_heartbeat"))),
            // the statement triggers on layover.dead_letters
            Map.entry("dead_letter_counts", Set.of(function("dead_letter_counts_apply"),
                    function("dead_letter_counts_reset"))),
            // the job types workers run, registered at start; read by layover.enqueue
            Map.entry("job_types", Set.of(CORE + "internal/jobs/JobSql.java")),
            // the application's price table, written at start
            Map.entry("model_prices", Set.of(CORE + "internal/observe/PriceSql.java")),
            Map.entry("time_series_counts", Set.of(CORE + "internal/observe/TimeSeriesSql.java",
                    function("time_series_add"))),
            Map.entry("batches", Set.of(CORE + "internal/batch/BatchSql.java", function("batch_gather"),
                    function("batch_collect"), function("batch_finish"), function("batch_leave"))),
            // recurring jobs: core's scheduler loop, code reconciliation and run-time schedules (issue 47)
            Map.entry("schedules", Set.of(CORE_SQL + "schedule_advance.sql", CORE_SQL + "schedule_insert.sql",
                    CORE_SQL + "schedule_update.sql", CORE_SQL + "schedule_code_remove.sql",
                    CORE_SQL + "schedule_pause.sql", CORE_SQL + "schedule_resume.sql",
                    CORE_SQL + "schedule_triggered.sql", CORE_SQL + "schedule_delete.sql")),
            Map.entry("batch_items", Set.of(CORE + "internal/batch/BatchSql.java", function("batch_gather"),
                    function("batch_collect"), function("batch_finish"), function("batch_leave"))),
            // the step store: a finished step's row; the job store's done delete removes a finished job's steps in
            // its statement; forget_steps for the dead-letter store's discard and replay from scratch
            // groups (issue 46): the group store; a member's row is written with its job's insert and its end
            // with its job's end (the job store's statements); the settle and the dead-letter store's discard
            Map.entry("groups", Set.of(CORE + "internal/jobs/GroupSql.java", function("group_settle"),
                    // retention: groups settled long ago whose callback finished
                    CORE + "history/JobHistoryRetention.java")),
            Map.entry("group_members", Set.of(CORE + "internal/jobs/JobSql.java", CORE_SQL + "job_park.sql",
                    CORE_SQL + "job_done.sql", CORE_SQL + "job_done_history.sql", CORE_SQL + "job_insert_batch.sql",
                    function("group_members_discarded"), function("dependencies_failed"),
                    // a child group's skipped callback ends discarded in its parent (groups of groups)
                    function("group_settle"))),
            // dependencies (issue 46): the job store's edges, ended by the functions a prerequisite's end calls
            Map.entry("job_dependencies", Set.of(CORE + "internal/jobs/JobSql.java", function("dependencies_completed"),
                    function("dependencies_failed"), CORE + "history/JobHistoryRetention.java")),
            Map.entry("job_steps", Set.of(CORE_SQL + "step_insert.sql", CORE_SQL + "job_done.sql", CORE_SQL + "job_done_history.sql",
                    function("forget_steps"), function("forget_job_type"),
                    // a signal's payload, stored in the step of the job waiting for it
                    function("signal"))));

    /**
     * The benchmarks are measurement harnesses, not Layover: they fill tables to measure reads of
     * them, and drive raw db-scheduler beside Layover for the comparisons.
     */
    private static final String FIXTURES = "bench/";

    /**
     * A migration's own statements, outside its functions, run once when it applies: they change
     * the schema (a backfill with it), they write nothing at run time. Its functions are scanned.
     */
    private static final String MIGRATIONS = "migrations/";

    private static final Pattern WRITE = Pattern.compile(
            "(?i)\\b(?:INSERT\\s+INTO|UPDATE|DELETE\\s+FROM|TRUNCATE(?:\\s+TABLE)?)\\s+layover\\.([a-z_]+)");

    private static final Pattern FUNCTION = Pattern.compile(
            "(?i)\\bCREATE\\s+(?:OR\\s+REPLACE\\s+)?FUNCTION\\s+layover\\.([a-z_0-9]+)\\s*\\(");

    private static final Pattern DOLLAR_QUOTE = Pattern.compile("\\$([A-Za-z_][A-Za-z_0-9]*)?\\$");

    @Test
    void everyWriteOfALayoverTableIsInItsOwnersSql() throws IOException {
        Path root = reactorRoot();
        Map<String, String> units = new TreeMap<>();
        try (Stream<Path> files = Files.walk(root)) {
            files.forEach(p -> {
                String rel = root.relativize(p).toString();
                if (rel.endsWith(".java") && rel.contains("/src/main/java/")) {
                    units.put(rel, read(p));
                } else if (rel.endsWith(".sql") && rel.contains("/src/main/resources/")) {
                    splitSql(rel, stripComments(read(p)), units);
                }
            });
        }

        Map<String, Set<String>> writers = new TreeMap<>();
        List<String> strays = new ArrayList<>();
        units.forEach((unit, text) -> {
            Matcher m = WRITE.matcher(text);
            while (m.find()) {
                String table = m.group(1);
                writers.computeIfAbsent(table, t -> new TreeSet<>()).add(unit);
                Set<String> owners = OWNERS.get(table);
                boolean exempt = unit.startsWith(FIXTURES) || unit.startsWith(MIGRATIONS);
                if (!exempt && (owners == null || !owners.contains(unit))) {
                    strays.add(unit + " writes layover." + table);
                }
            }
        });
        List<String> distinct = strays.stream().distinct().toList();
        assertTrue(distinct.isEmpty(), () -> "writes outside the table's owner (docs/architecture.md):\n  "
                + String.join("\n  ", distinct) + "\nall writers: " + writers);

        List<String> missing = OWNERS.values().stream().flatMap(Set::stream).distinct()
                .filter(owner -> !units.containsKey(owner)).sorted().toList();
        assertEquals(List.of(), missing, "owners named in the map that the scan did not find (renamed, removed?)");

        // the scan read every kind of unit: Java, core's SQL files, the migrations' functions and triggers
        Set<String> jobWriters = writers.getOrDefault("scheduled_tasks", Set.of());
        for (String unit : List.of(CORE + "internal/jobs/JobSql.java", CORE_SQL + "job_insert.sql",
                function("pick"), function("jobs_wake_batched"))) {
            assertTrue(jobWriters.contains(unit), "the scan found " + unit + " writing the job table: " + writers);
        }
        assertTrue(writers.getOrDefault("dead_letter_counts", Set.of()).contains(function("dead_letter_counts_apply")),
                "the scan found the trigger functions: " + writers);
        List<String> functions = units.keySet().stream().filter(u -> u.startsWith("function ")).toList();
        assertTrue(functions.size() > 30, "the scan found " + functions.size() + " functions in the migrations: " + functions);
    }

    /**
     * Adds a SQL file's units: each {@code CREATE FUNCTION layover.name}'s body as
     * {@code function layover.name} (every definition of it, overloads and replacements
     * included), and the rest of the file under its path.
     */
    private static void splitSql(String path, String sql, Map<String, String> units) {
        StringBuilder rest = new StringBuilder();
        int at = 0;
        Matcher f = FUNCTION.matcher(sql);
        while (f.find(at)) {
            String name = function(f.group(1).toLowerCase(java.util.Locale.ROOT));
            Matcher open = DOLLAR_QUOTE.matcher(sql);
            if (!open.find(f.end())) {
                throw new IllegalStateException(path + ": " + name + " has no dollar-quoted body");
            }
            String tag = open.group();
            int close = sql.indexOf(tag, open.end());
            if (close < 0) {
                throw new IllegalStateException(path + ": " + name + "'s body " + tag + " is not closed");
            }
            rest.append(sql, at, f.start());
            units.merge(name, sql.substring(open.end(), close), (a, b) -> a + "\n" + b);
            at = close + tag.length();
        }
        rest.append(sql.substring(at));
        units.put(path, rest.toString());
    }

    /** The SQL without its comments ({@code --} to the end of the line, and block comments). */
    private static String stripComments(String sql) {
        StringBuilder out = new StringBuilder(sql.length());
        boolean quoted = false;
        for (int i = 0; i < sql.length(); i++) {
            char c = sql.charAt(i);
            if (quoted) {
                quoted = c != '\'';
                out.append(c);
            } else if (c == '\'') {
                quoted = true;
                out.append(c);
            } else if (sql.startsWith("--", i)) {
                int eol = sql.indexOf('\n', i);
                i = (eol < 0 ? sql.length() : eol) - 1;
            } else if (sql.startsWith("/*", i)) {
                int end = sql.indexOf("*/", i + 2);
                i = (end < 0 ? sql.length() : end + 2) - 1;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
