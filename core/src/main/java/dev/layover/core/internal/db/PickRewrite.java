package dev.layover.core.internal.db;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.Collection;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Rewrites db-scheduler's lock-and-fetch so that a pick takes the due jobs holding a bucket permit
 * or a place in their key's waiting line first ({@code execution_time = permit_at}: rescheduled to
 * the permit they booked; {@code permit_at} null with reason {@code bucket}: at their place),
 * then due jobs in db-scheduler's own order, in the same statement and with the same row count.
 *
 * <p>Why: a key's backlog is booked a horizon at a time, and jobs beyond it wait in the key's line;
 * but jobs that are due and hold nothing (a backlog that has not been placed yet, a million
 * jobs enqueued at once) sort by run time ahead of every job whose permit has just come due, and a
 * pick that took them first let those permits lapse unspent: a deep backlog started nothing
 * (docs/benchmarks.md, "Deep backlog"). The first branch reads only the grace's range of run times
 * ({@code execution_time_idx} from now less the grace), so it costs an index probe however many
 * rows were deleted behind it; db-scheduler's branch reads from the oldest run time up, through the
 * index entries of every job done since the table's last vacuum (a million-job backlog behind one
 * key of 50/s, picked through it at their places: pick p50 8.7 ms with inlined bucket arithmetic, 3.0 ms for its
 * permit holders; the line's places, taken here, are the jobs a deep backlog runs).
 *
 * <p>Only permits and places still within the gate's grace are taken first. A lapsed permit holder (its
 * workers were away: a batch enqueued while none ran, booked at enqueue) is due like any job
 * and no longer first: taken first, oldest first, thousands of lapsed holders each picked to be told
 * to wait let the next permits lapse behind them, faster than one worker could tell them
 * (measured: 1,000,000 jobs over 10 keys, enqueued in 30 s before the worker started, ran none in
 * 120 s).
 *
 * <p>The statement's parameters keep their places: db-scheduler's {@code picked = ?} and
 * {@code execution_time <= ?} are read once, into a one-row derived table both branches use; the
 * unresolved-task filter stays in db-scheduler's branch, and the permit branch takes only the job
 * types this worker runs. Pinned to db-scheduler's statement by {@code PickRewriteTest}.
 */
public final class PickRewrite {

    private static final Pattern PICK = Pattern.compile(
            "(?is)^(.*\\bIN\\s*\\(\\s*)(SELECT\\s+st2\\.task_name\\s*,\\s*st2\\.task_instance\\s+FROM\\s+(\\S+)\\s+st2\\s+WHERE\\s+)"
                    + "picked\\s*=\\s*\\?\\s+and\\s+execution_time\\s*<=\\s*\\?(.*?FOR\\s+UPDATE\\s+SKIP\\s+LOCKED\\s*(LIMIT\\s+\\d+)\\s*)"
                    + "\\)(\\s*RETURNING\\b.*)$");

    private final String knownTasks;
    private final String graceSeconds;
    private final ConcurrentHashMap<String, String> rewritten = new ConcurrentHashMap<>();

    /**
     * @param taskNames the tasks this worker runs: the only ones its permit branch may pick
     * @param permitGrace how late a held permit may still be spent (the gate's grace): an older
     *     one has lapsed, and its job is left to db-scheduler's branch
     */
    public PickRewrite(Collection<String> taskNames, Duration permitGrace) {
        this.knownTasks = taskNames.stream().map(n -> "'" + n.replace("'", "''") + "'")
                .collect(Collectors.joining(", ", "ARRAY[", "]::text[]"));
        this.graceSeconds = BigDecimal.valueOf(permitGrace.toMillis(), 3).toPlainString();
    }

    /**
     * @param sql a statement db-scheduler prepares
     * @return its lock-and-fetch with due permit holders first; any other statement unchanged
     */
    public String rewrite(String sql) {
        if (!isPick(sql)) {
            return sql; // every statement db-scheduler prepares passes here; only its pick is rewritten
        }
        // the pick differs only by its row count: each form is rewritten once
        return rewritten.computeIfAbsent(sql, this::rewritePick);
    }

    /** @return whether a statement db-scheduler prepares is its lock-and-fetch (its pick) */
    static boolean isPick(String sql) {
        return sql.contains("locked_executions");
    }

    private String rewritePick(String sql) {
        Matcher m = PICK.matcher(sql);
        if (!m.matches()) {
            return sql;
        }
        String table = m.group(3);
        String limit = m.group(5);
        // the rows to lock are chosen once, in a materialized CTE: a bare IN (subquery) may be
        // planned as the inner side of a nested loop and rescanned per row of the outer table, and
        // each rescan of a SKIP LOCKED subquery can take other rows (seen: one pick locking 19,932
        // of 20,000 due rows after half a minute, under a generic plan made on an almost empty table)
        return m.group(1)
                + "WITH pick AS MATERIALIZED ("
                + "SELECT u.task_name, u.task_instance FROM (SELECT ?::boolean AS picked_p, ?::timestamptz AS now_p) prm, LATERAL ("
                + "SELECT * FROM (SELECT st0.task_name, st0.task_instance FROM " + table + " st0"
                + " WHERE st0.picked = prm.picked_p AND st0.execution_time <= prm.now_p"
                + " AND (st0.execution_time = st0.permit_at"
                + " OR (st0.permit_at IS NULL AND st0.last_reschedule_reason = 'bucket'))"
                + " AND st0.task_name = ANY(" + knownTasks + ")"
                + " AND st0.execution_time >= prm.now_p - interval '" + graceSeconds + " seconds'"
                + " ORDER BY st0.execution_time FOR UPDATE SKIP LOCKED " + limit + ") held"
                + " UNION ALL SELECT * FROM (" + m.group(2) + "picked = prm.picked_p and execution_time <= prm.now_p"
                + m.group(4) + ") rest) u " + limit + ") SELECT task_name, task_instance FROM pick)" + m.group(6);
    }
}
