package dev.layover.core.internal.schedule;

import dev.layover.core.schedule.MissedRuns;
import dev.layover.core.schedule.Overlap;
import dev.layover.core.schedule.Timing;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;

/**
 * A schedule's definition as {@code layover.schedules} stores it: the columns a create, an update
 * and a code schedule's reconciliation write.
 *
 * @param jobType the job type
 * @param timing the timing
 * @param argsJson the args as JSON, or null when code computes them per occurrence
 * @param missed the missed-run policy
 * @param overlap the overlap policy
 * @param jitterMs the jitter, ms
 * @param priority the occurrences' priority
 */
record Definition(String jobType, Timing timing, String argsJson, MissedRuns missed, Overlap overlap,
        long jitterMs, int priority) {

    /** @return whether the args are computed by code per occurrence */
    public boolean argsFromCode() {
        return argsJson == null;
    }

    /** @return the missed-run policy's column value */
    public String missedColumn() {
        return missed.policy().name().toLowerCase(Locale.ROOT);
    }

    /** @return the overlap policy's column value */
    public String overlapColumn() {
        return overlap.name().toLowerCase(Locale.ROOT);
    }

    /**
     * A code schedule's definition hash: SHA-256 of every column the code decides, so that a start
     * whose code defines the schedule as stored writes nothing.
     *
     * @return the hash, hex
     */
    public String hash() {
        String canonical = String.join("\u0001", jobType, String.valueOf(timing.cronExpression()),
                String.valueOf(timing.zone()), String.valueOf(timing.interval()),
                argsJson == null ? "\u0002code" : argsJson, missedColumn(), String.valueOf(missed.window()),
                overlapColumn(), Long.toString(jitterMs), Integer.toString(priority));
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(canonical.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
