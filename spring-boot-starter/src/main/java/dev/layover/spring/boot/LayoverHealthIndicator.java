package dev.layover.spring.boot;

import dev.layover.core.Layover;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * Layover's health ({@code /actuator/health/layover}): UP when the database answers with
 * Layover's schema and the workers run (or the application is an enqueue-only client,
 * {@code layover.run-jobs=false}); DOWN when the database does not answer or the workers have
 * stopped. Provider keys whose breaker is open or half-open do not make it DOWN (a provider's
 * outage is not the application's): they are listed in the details, with when they open until
 * and why.
 *
 * <p>Database: one read per check, {@code SELECT ... FROM layover.breakers WHERE state <> 'closed'}
 * (served by the partial index on state), at most {@value #MAX_LISTED} rows, 5 s timeout.
 */
public class LayoverHealthIndicator extends AbstractHealthIndicator {

    /** The most open breakers listed in the details. */
    public static final int MAX_LISTED = 50;

    private static final String OPEN_BREAKERS = "SELECT provider_key, state, open_until, reason "
            + "FROM layover.breakers WHERE state <> 'closed' ORDER BY provider_key LIMIT " + (MAX_LISTED + 1);

    private final Layover layover;
    private final boolean runJobs;

    /**
     * @param layover the application's instance
     * @param runJobs whether its workers are meant to run ({@code layover.run-jobs})
     */
    public LayoverHealthIndicator(Layover layover, boolean runJobs) {
        super("Layover health check failed");
        this.layover = layover;
        this.runJobs = runJobs;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        List<Map<String, Object>> open = new ArrayList<>();
        try (Connection c = layover.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement(OPEN_BREAKERS)) {
            ps.setQueryTimeout(5);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Map<String, Object> b = new LinkedHashMap<>();
                    b.put("providerKey", rs.getString(1));
                    b.put("state", rs.getString(2));
                    OffsetDateTime until = rs.getObject(3, OffsetDateTime.class);
                    b.put("openUntil", until == null ? null : until.toString());
                    b.put("reason", rs.getString(4));
                    open.add(b);
                }
            }
        } catch (SQLException e) {
            builder.down().withDetail("database", "unreachable: " + e.getMessage());
            return;
        }
        boolean workers = layover.isRunning();
        if (runJobs && !workers) {
            builder.down();
        } else {
            builder.up();
        }
        builder.withDetail("database", "reachable")
                .withDetail("workers", workers ? "running" : runJobs ? "stopped" : "off (layover.run-jobs=false)")
                .withDetail("jobTypes", layover.jobTypes().size());
        if (open.size() > MAX_LISTED) {
            open = open.subList(0, MAX_LISTED);
            builder.withDetail("openBreakersTruncated", true);
        }
        builder.withDetail("openBreakers", open);
    }
}
