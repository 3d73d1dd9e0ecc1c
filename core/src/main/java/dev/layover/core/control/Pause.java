package dev.layover.core.control;

import java.time.Instant;

/**
 * A pause of a job type or a key: a row of {@code layover.pauses}.
 *
 * @param id the row's id
 * @param scope what is paused
 * @param target the job type name, or the key
 * @param pausedAt when the pause began
 * @param pausedBy who paused
 * @param reason why, or null
 * @param heldJobs waiting jobs moved aside when the pause began
 * @param resumedAt when it ended, or null while active
 * @param resumedBy who resumed, or null
 * @param releasedJobs held jobs given back their run time by the resume, or null
 */
public record Pause(long id, Scope scope, String target, Instant pausedAt, String pausedBy, String reason, long heldJobs,
        Instant resumedAt, String resumedBy, Long releasedJobs) {

    /** What a pause covers. */
    public enum Scope {
        /** Every job of a job type. */
        JOB_TYPE("job_type"),
        /** Every job whose provider key, or one of whose limit keys, is the target. */
        KEY("key");

        private final String code;

        Scope(String code) {
            this.code = code;
        }

        /** @return the value stored in {@code layover.pauses.scope} */
        public String code() {
            return code;
        }

        /**
         * @param code a stored scope
         * @return the scope
         * @throws IllegalArgumentException for an unknown code
         */
        public static Scope fromCode(String code) {
            for (Scope s : values()) {
                if (s.code.equals(code)) {
                    return s;
                }
            }
            throw new IllegalArgumentException("unknown pause scope " + code);
        }
    }

    /** @return whether the pause is still active */
    public boolean active() {
        return resumedAt == null;
    }
}
