package dev.layover.dlq;

import dev.layover.core.spi.Db;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * The audit log, {@code layover.audit_log}: who did what to dead letters (and breakers), when, to
 * how many, and why. {@link DeadLetters} writes a row for every replay, edit, discard and move
 * back; {@link DeadLetterRetention} one for every purge that deleted something. Other components
 * (the replay console's forced breaker actions) write theirs with {@link #record}, ideally in the
 * same transaction as the action. Rows are never updated after an action finishes and never
 * purged by Layover.
 */
public final class AuditLog {

    private final Db db;

    private AuditLog(DataSource dataSource) {
        this.db = new Db(Objects.requireNonNull(dataSource, "dataSource"));
    }

    /**
     * @param dataSource the database holding Layover's schema
     * @return the audit log there
     */
    public static AuditLog create(DataSource dataSource) {
        return new AuditLog(dataSource);
    }

    /**
     * Records an action that is not about dead letters chosen by id or filter, such as forcing a
     * breaker open, in the caller's transaction (neither commits nor closes {@code connection}).
     *
     * @param connection the caller's connection
     * @param actor who, 1-200 characters
     * @param action a lower-case word such as {@code force_open} ({@code [a-z][a-z0-9_]*}, at most 40)
     * @param subject what it is about (e.g. a provider key), or {@code null}
     * @param count how many things changed
     * @param note why, or {@code null}
     * @param detailsJson a JSON object with anything else, or {@code null}
     * @return the row's id
     * @throws dev.layover.core.LayoverException when the database refuses it
     */
    public long record(Connection connection, String actor, String action, String subject, long count, String note,
            String detailsJson) {
        try {
            return insert(connection, ReplayOptions.checkActor(actor), checkAction(action), subject, count, null, null,
                    ReplayOptions.checkNote(note), detailsJson, true);
        } catch (SQLException e) {
            throw Db.failure("writing the audit log", e);
        }
    }

    /**
     * Like {@link #record(Connection, String, String, String, long, String, String)}, autocommitted.
     *
     * @param actor who
     * @param action what
     * @param subject what it is about, or {@code null}
     * @param count how many
     * @param note why, or {@code null}
     * @param detailsJson a JSON object, or {@code null}
     * @return the row's id
     */
    public long record(String actor, String action, String subject, long count, String note, String detailsJson) {
        return db.autocommit("writing the audit log",
                c -> insert(c, ReplayOptions.checkActor(actor), checkAction(action), subject, count, null, null,
                        ReplayOptions.checkNote(note), detailsJson, true));
    }

    /**
     * A page of the log, newest first.
     *
     * @param limit rows, 1-1,000
     * @param beforeId only rows older than this id (the last id of the previous page), or {@code null}
     * @return the rows
     */
    public List<AuditEntry> list(int limit, Long beforeId) {
        if (limit < 1 || limit > 1000) {
            throw new IllegalArgumentException("limit must be 1-1000, was " + limit);
        }
        return db.autocommit("reading the audit log", c -> {
            try (PreparedStatement ps = c.prepareStatement(DlqSql.AUDIT_PAGE)) {
                DlqSql.bind(c, ps, beforeId, beforeId, limit);
                return read(ps);
            }
        });
    }

    /**
     * Every action that named this dead letter by id, oldest first (actions by filter are not
     * included: their rows keep the filter, not the ids).
     *
     * @param deadLetterId a dead letter id
     * @return the rows
     */
    public List<AuditEntry> forDeadLetter(long deadLetterId) {
        return db.autocommit("reading the audit log", c -> {
            try (PreparedStatement ps = c.prepareStatement(DlqSql.AUDIT_OF)) {
                DlqSql.bind(c, ps, deadLetterId);
                return read(ps);
            }
        });
    }

    private static String checkAction(String action) {
        if (action == null || !action.matches("[a-z][a-z0-9_]{0,39}")) {
            throw new IllegalArgumentException("audit action must be a lower-case word ([a-z][a-z0-9_]*, at most 40 "
                    + "characters), got: " + action);
        }
        return action;
    }

    static long insert(Connection c, String actor, String action, String subject, long count, Long[] ids,
            String filterJson, String note, String detailsJson, boolean finished) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(DlqSql.AUDIT_INSERT)) {
            DlqSql.bind(c, ps, actor, action, subject, count, new DlqSql.LongArray(ids), filterJson, note, detailsJson,
                    finished);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    static void add(Connection c, long auditId, long count, Long[] ids) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(DlqSql.AUDIT_ADD)) {
            DlqSql.LongArray a = new DlqSql.LongArray(ids);
            DlqSql.bind(c, ps, count, a, a, auditId);
            ps.executeUpdate();
        }
    }

    static void finish(Connection c, long auditId, String detailsJson) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(DlqSql.AUDIT_FINISH)) {
            DlqSql.bind(c, ps, detailsJson, auditId);
            ps.executeUpdate();
        }
    }

    private static List<AuditEntry> read(PreparedStatement ps) throws SQLException {
        List<AuditEntry> out = new ArrayList<>();
        try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                List<Long> ids = new ArrayList<>();
                Array a = rs.getArray("ids");
                if (a != null) {
                    for (Object o : (Object[]) a.getArray()) {
                        ids.add(((Number) o).longValue());
                    }
                }
                OffsetDateTime finished = rs.getObject("finished_at", OffsetDateTime.class);
                out.add(new AuditEntry(rs.getLong("id"), rs.getObject("at", OffsetDateTime.class).toInstant(),
                        rs.getString("actor"), rs.getString("action"), rs.getString("subject"), rs.getLong("count"),
                        List.copyOf(ids), rs.getString("filter"), rs.getString("note"), rs.getString("details"),
                        finished == null ? null : finished.toInstant()));
            }
        }
        return out;
    }
}
