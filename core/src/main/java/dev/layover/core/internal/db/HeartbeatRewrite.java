package dev.layover.core.internal.db;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Rewrites two of db-scheduler's statements so that a database outage makes no job look dead.
 *
 * <ul>
 *   <li>Its per-execution heartbeat ({@code update .. set last_heartbeat = ? where .. version = ?})
 *       takes its time once per round, before it gets a connection. A round held up by an outage
 *       writes, when the database is back, a time from before the outage over the fresh heartbeat
 *       the engine wrote when it came back. Rewritten to {@code last_heartbeat =
 *       greatest(last_heartbeat, ?)}: a heartbeat never moves back.
 *   <li>Its dead-execution query ({@code select * from .. where picked = ? and last_heartbeat <=
 *       ?}) would, in the first worker back after an outage, take the jobs of every worker whose
 *       pool has not reconnected yet for dead. Rewritten to {@code last_heartbeat <=
 *       layover.dead_heartbeat_cutoff(?)}: nothing is dead until 10 s after the database
 *       returned, and the index on {@code last_heartbeat} still serves the query.
 * </ul>
 *
 * Pinned to db-scheduler's statements by {@code HeartbeatRewriteTest}.
 */
final class HeartbeatRewrite {

    private static final Pattern HEARTBEAT_UPDATE = Pattern.compile(
            "(?is)^(\\s*update\\s+\\S+\\s+set\\s+)last_heartbeat\\s*=\\s*\\?(.*)$");

    private static final Pattern DEAD_EXECUTIONS = Pattern.compile(
            "(?is)^(\\s*select\\s+\\*\\s+from\\s+\\S+\\s+where\\s+picked\\s*=\\s*\\?\\s+and\\s+last_heartbeat\\s*<=\\s*)\\?(.*)$");

    private HeartbeatRewrite() {}

    /**
     * @param sql a statement db-scheduler prepares
     * @return the heartbeat statement made monotonic, the dead-execution query counting from the
     *     database's return; any other statement unchanged
     */
    static String rewrite(String sql) {
        Matcher m = HEARTBEAT_UPDATE.matcher(sql);
        if (m.matches()) {
            return m.group(1) + "last_heartbeat = greatest(last_heartbeat, ?)" + m.group(2);
        }
        Matcher d = DEAD_EXECUTIONS.matcher(sql);
        if (d.matches()) {
            return d.group(1) + "layover.dead_heartbeat_cutoff(?)" + d.group(2);
        }
        return sql;
    }
}
