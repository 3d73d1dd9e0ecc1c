package dev.layover.core.internal.db;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * db-scheduler's per-execution heartbeat ({@code update .. set last_heartbeat = ? where ..
 * version = ?}) takes its time once per round, before it gets a connection. A round held up by an
 * outage writes, when the database is back, a time from before the outage, over the fresh
 * heartbeat the engine wrote when it came back, and the job looks dead to every worker. This
 * rewrites it to {@code last_heartbeat = greatest(last_heartbeat, ?)}: a heartbeat never moves
 * back. Pinned to db-scheduler's statement by {@code HeartbeatRewriteTest}.
 */
final class HeartbeatRewrite {

    private static final Pattern HEARTBEAT_UPDATE = Pattern.compile(
            "(?is)^(\\s*update\\s+\\S+\\s+set\\s+)last_heartbeat\\s*=\\s*\\?(.*)$");

    private HeartbeatRewrite() {}

    /**
     * @param sql a statement db-scheduler prepares
     * @return the heartbeat statement made monotonic; any other statement unchanged
     */
    static String monotonic(String sql) {
        Matcher m = HEARTBEAT_UPDATE.matcher(sql);
        return m.matches() ? m.group(1) + "last_heartbeat = greatest(last_heartbeat, ?)" + m.group(2) : sql;
    }
}
