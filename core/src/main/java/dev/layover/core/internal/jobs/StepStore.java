package dev.layover.core.internal.jobs;

import dev.layover.core.internal.db.NamedSql;
import dev.layover.core.spi.Db;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.HashMap;
import java.util.Map;

/**
 * The owner of {@code layover.job_steps} at run time (docs/steps.md): a run's one read of its job's
 * stored steps ({@code step_load.sql}) and one insert per finished step or begun sleep
 * ({@code step_insert.sql}). The done delete of {@link JobSql} removes a finished job's steps in its
 * own statement; {@code layover.forget_steps()} drops them for the dead-letter store.
 */
public final class StepStore {

    private static final NamedSql LOAD = NamedSql.load("step_load");
    private static final NamedSql INSERT = NamedSql.load("step_insert");

    /**
     * One stored step.
     *
     * @param name its name
     * @param kind {@code call} or {@code sleep}
     * @param resultType the class name its result was stored as (a call), or null
     * @param result its result as JSON text, or null
     * @param providerKey the key that admitted it, or null
     * @param expired whether its validity passed (database time)
     * @param wakeAt a sleep's end, or null
     * @param woken whether a sleep's end passed (database time)
     */
    public record Stored(String name, String kind, String resultType, String result, String providerKey,
            boolean expired, Instant wakeAt, boolean woken) {}

    /**
     * A step to write.
     *
     * @param jobType the job type
     * @param jobId the job id
     * @param name the step's name
     * @param kind {@code call} or {@code sleep}
     * @param resultType the result's class name (a call)
     * @param result the result as JSON text (a call)
     * @param resultBytes its size in UTF-8 bytes
     * @param providerKey the key that admitted it, or null
     * @param attempt the job's attempt
     * @param durationMs how long the step ran, or null
     * @param validForSeconds its validity, or null
     * @param sleepSeconds a sleep's length, or null
     * @param tokens the usage reported inside it, or null
     * @param worker this worker's name
     */
    public record Finished(String jobType, String jobId, String name, String kind, String resultType, String result,
            Integer resultBytes, String providerKey, int attempt, Double durationMs, Double validForSeconds,
            Double sleepSeconds, RunTokens tokens, String worker) {}

    private final Db db;

    /** @param db the database */
    public StepStore(Db db) {
        this.db = db;
    }

    /**
     * @param jobType the job type
     * @param jobId the job id
     * @return the job's stored steps by name
     */
    public Map<String, Stored> load(String jobType, String jobId) {
        return db.autocommit("reading the steps of job " + jobType + "/" + jobId, c -> {
            Map<String, Object> p = new HashMap<>();
            p.put("job_type", jobType);
            p.put("job_id", jobId);
            Map<String, Stored> steps = new HashMap<>();
            try (PreparedStatement ps = LOAD.prepare(c, p); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    OffsetDateTime wake = rs.getObject("wake_at", OffsetDateTime.class);
                    steps.put(rs.getString("name"), new Stored(rs.getString("name"), rs.getString("kind"),
                            rs.getString("result_type"), rs.getString("result"), rs.getString("provider_key"),
                            rs.getBoolean("expired"), wake == null ? null : wake.toInstant(), rs.getBoolean("woken")));
                }
            }
            return steps;
        });
    }

    /**
     * Writes one finished step (or begun sleep), replacing a stored one of its name.
     *
     * @param f the step
     * @return its wake time (a sleep), else null
     */
    public Instant insert(Finished f) {
        return db.autocommit("storing step '" + f.name() + "' of job " + f.jobType() + "/" + f.jobId(), c -> {
            Map<String, Object> p = new HashMap<>();
            p.put("job_type", f.jobType());
            p.put("job_id", f.jobId());
            p.put("name", f.name());
            p.put("kind", f.kind());
            p.put("result_type", f.resultType());
            p.put("result", f.result());
            p.put("result_bytes", f.resultBytes());
            p.put("provider_key", f.providerKey());
            p.put("attempt", f.attempt());
            p.put("duration_ms", f.durationMs());
            p.put("valid_for_s", f.validForSeconds());
            p.put("sleep_s", f.sleepSeconds());
            RunTokens t = f.tokens();
            p.put("input_tokens", t == null ? null : t.input());
            p.put("output_tokens", t == null ? null : t.output());
            p.put("cached_input_tokens", t == null ? null : t.cached());
            p.put("worker", f.worker());
            try (PreparedStatement ps = INSERT.prepare(c, p); ResultSet rs = ps.executeQuery()) {
                rs.next();
                OffsetDateTime wake = rs.getObject("wake_at", OffsetDateTime.class);
                return wake == null ? null : wake.toInstant();
            }
        });
    }
}
