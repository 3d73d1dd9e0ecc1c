package dev.layover.core.internal.jobs;

/**
 * The group store's statements ({@code layover.groups}, {@code layover.group_members}); the job
 * rows of a group go through {@link JobSql} and {@code job_insert_batch.sql}. See decision 0005.
 */
final class GroupSql {

    private GroupSql() {}

    /** The group's transaction-scoped advisory lock, as {@code layover.group_settle} takes it. Parameter: id. */
    static final String LOCK = "SELECT pg_advisory_xact_lock(1735357040, hashtext(?))";

    /**
     * A new group; nothing when its id exists. Parameters: id, callback type, policy, sealed
     * (boolean), callback lead (seconds: how far back its release may date the callback's run
     * time). Returns the id when inserted.
     */
    static final String CREATE = """
            INSERT INTO layover.groups (id, callback_type, policy, sealed_at, callback_lead)
            VALUES (?, ?, ?, CASE WHEN ?::boolean THEN now() END, make_interval(secs => ?))
            ON CONFLICT (id) DO NOTHING
            RETURNING id""";

    /** A group's state, read after its lock. Parameter: id. */
    static final String STATE = "SELECT sealed_at IS NOT NULL AS sealed, callback_type FROM layover.groups WHERE id = ?";

    /** Seals a group (its lock held). Parameter: id. Returns 1 when this sealed it. */
    static final String SEAL = "UPDATE layover.groups SET sealed_at = now() WHERE id = ? AND sealed_at IS NULL";

    /**
     * Settles groups whose members may all have ended. Parameters: ids (text[]), now (a test
     * clock's time, or null for the database's).
     */
    static final String SETTLE = "SELECT layover.group_settle(?::text[], ?::timestamptz)";

    /** The group a callback job belongs to. Parameters: id, callback type. */
    static final String OF_CALLBACK = "SELECT policy FROM layover.groups WHERE id = ? AND callback_type = ?";

    /** A group's members, in the order they were added. Parameter: id. */
    static final String MEMBERS = """
            SELECT job_type, job_id, state, result::text FROM layover.group_members
            WHERE group_id = ? ORDER BY added_at, job_type, job_id""";
}
