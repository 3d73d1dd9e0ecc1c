package dev.layover.core.internal.jobs;

import dev.layover.core.GroupException;
import dev.layover.core.GroupOptions;
import dev.layover.core.GroupResult;
import dev.layover.core.spi.Db;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The owner of {@code layover.groups} and {@code layover.group_members} (with the job store's
 * statements, which write a member's row with its job's insert and its end with its job's end).
 * Every method runs on the connection it is given, in its caller's transaction.
 */
public final class GroupStore {

    private final Db db;

    /**
     * @param db the database (for reads outside a transaction: {@link #result})
     */
    public GroupStore(Db db) {
        this.db = db;
    }

    /**
     * Inserts a group's row ({@link GroupSql#CREATE}).
     *
     * @param callbackLead how far back the release may date the callback's run time (half its
     *     type's maxDeferral: the pick parks a keyed job kept waiting longer than that)
     * @return true when inserted, false when a group of that id exists
     */
    static boolean create(Connection c, String id, String callbackType, GroupOptions.Policy policy, boolean sealed,
            java.time.Duration callbackLead) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(GroupSql.CREATE)) {
            Db.bind(ps, id, callbackType, policy.stored(), sealed, callbackLead.toMillis() / 1000.0);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /**
     * Takes the group's advisory lock (held to the end of the transaction, as the settle takes it)
     * and checks that it exists and is open: a member added now is seen by every later settle.
     *
     * @throws GroupException when the group does not exist or is sealed
     */
    static void lockOpen(Connection c, String id) throws SQLException {
        if (lockAndRead(c, id)) {
            throw new GroupException("group '" + id + "' is sealed: no member can be added to it");
        }
    }

    /** @return whether the group is sealed, its lock held; throws when it does not exist */
    private static boolean lockAndRead(Connection c, String id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(GroupSql.LOCK)) {
            ps.setString(1, id);
            ps.execute();
        }
        // a statement after the lock: it sees what was committed before the lock was granted
        try (PreparedStatement ps = c.prepareStatement(GroupSql.STATE)) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new GroupException("no group has the id '" + id + "'");
                }
                return rs.getBoolean(1);
            }
        }
    }

    /**
     * Seals a group under its lock and settles it: when every member has ended already, its
     * callback is made due in this transaction.
     *
     * @param now a test clock's time, or null for the database's
     * @return true when this call sealed it, false when it was sealed already
     * @throws GroupException when the group does not exist
     */
    static boolean seal(Connection c, String id, Instant now) throws SQLException {
        if (lockAndRead(c, id)) {
            return false;
        }
        try (PreparedStatement ps = c.prepareStatement(GroupSql.SEAL)) {
            ps.setString(1, id);
            ps.executeUpdate();
        }
        settle(c, new String[] {id}, now);
        return true;
    }

    /**
     * Settles groups whose members may all have ended ({@code layover.group_settle}), on the
     * connection whose transaction wrote those ends.
     *
     * @param c the connection, in the transaction that wrote the members' ends
     * @param groups the groups' ids
     * @param now a test clock's time, or null for the database's (a released callback is due as of
     *     its group's creation, at most its lead before this)
     * @return the groups whose callback was made due
     */
    static int settle(Connection c, String[] groups, Instant now) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(GroupSql.SETTLE)) {
            ps.setArray(1, c.createArrayOf("text", groups));
            ps.setTimestamp(2, now == null ? null : java.sql.Timestamp.from(now));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /**
     * The group whose callback a job is (its id is the group's id, its type the callback type): two
     * reads, outside any transaction.
     *
     * @param jobType the job's type
     * @param jobId the job's id
     * @return the group and its members, or empty when the job is no group's callback
     */
    public Optional<GroupResult> result(String jobType, String jobId) {
        return db.autocommit("reading the group of job " + jobType + "/" + jobId, c -> {
            GroupOptions.Policy policy;
            try (PreparedStatement ps = c.prepareStatement(GroupSql.OF_CALLBACK)) {
                Db.bind(ps, jobId, jobType);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    policy = GroupOptions.Policy.of(rs.getString(1));
                }
            }
            List<GroupResult.Member> members = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(GroupSql.MEMBERS)) {
                ps.setString(1, jobId);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        members.add(new GroupResult.Member(rs.getString(1), rs.getString(2), rs.getString(3),
                                rs.getString(4)));
                    }
                }
            }
            return Optional.of(new GroupResult(jobId, policy, members));
        });
    }
}
