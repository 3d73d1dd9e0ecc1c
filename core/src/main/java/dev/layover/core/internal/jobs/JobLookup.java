package dev.layover.core.internal.jobs;

import dev.layover.core.JobStatus;
import dev.layover.core.spi.Db;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.Optional;

/**
 * Finds where a job is by its type and id, from the documented views: the live job first, else the
 * newest of its dead letter and its history row (a dead letter wins a tie: its state says more).
 * One read.
 */
public final class JobLookup {

    private static final String LOOKUP = """
            SELECT x.state, x.run_at, x.attempts, x.reschedules, x.failure_type, x.dead_letter_id, x.finished_at,
                   x.result
            FROM (
                SELECT 0 AS live, j.run_at AS at, 0 AS source, j.state, j.run_at, j.attempts, j.reschedules,
                       NULL::text AS failure_type, j.dead_letter_id, NULL::timestamptz AS finished_at, NULL::text AS result
                FROM layover.jobs j WHERE j.job_type = ? AND j.id = ?
                UNION ALL
                (SELECT 1, d.state_changed_at, 0,
                        CASE WHEN d.failure_type = 'cancelled' AND d.state = 'parked' THEN 'cancelled' ELSE d.state END,
                        NULL, d.attempts, d.reschedules, d.failure_type, d.id, d.parked_at, NULL
                 FROM layover.dead_letters d WHERE d.job_type = ? AND d.job_id = ? ORDER BY d.id DESC LIMIT 1)
                UNION ALL
                (SELECT 1, h.finished_at, 1, h.outcome, NULL, h.attempts, h.reschedules, h.failure_type,
                        h.dead_letter_id, h.finished_at, h.result::text
                 FROM layover.job_history h WHERE h.job_type = ? AND h.job_id = ? ORDER BY h.finished_at DESC LIMIT 1)
            ) x
            ORDER BY x.live, x.at DESC, x.source
            LIMIT 1""";

    private final Db db;

    /**
     * @param db the database
     */
    public JobLookup(Db db) {
        this.db = db;
    }

    /**
     * @param jobType the job type
     * @param id the job id
     * @return where it is, or empty when no view knows it
     */
    public Optional<JobStatus> find(String jobType, String id) {
        return db.autocommit("looking up job " + jobType + "/" + id, c -> {
            try (PreparedStatement ps = c.prepareStatement(LOOKUP)) {
                Db.bind(ps, jobType, id, jobType, id, jobType, id);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    long dl = rs.getLong("dead_letter_id");
                    Long deadLetter = rs.wasNull() ? null : dl;
                    return Optional.of(new JobStatus(jobType, id, JobStatus.stateOf(rs.getString("state")),
                            instant(rs, "run_at"), rs.getInt("attempts"), rs.getInt("reschedules"),
                            rs.getString("failure_type"), deadLetter, instant(rs, "finished_at"), rs.getString("result")));
                }
            }
        });
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
    }
}
