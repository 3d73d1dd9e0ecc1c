package dev.layover.core.internal.gate;

import dev.layover.core.spi.Db;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The gate's connection to the database and who it is there: every statement of the provider
 * state runs through here, counted as inline (on a worker thread, deciding or recording a call)
 * or background (the refresh), so tests can measure what the hot path costs.
 */
final class GateDb {

    private static final int MAX_DETAIL = 1000;

    final Db db;
    /** This instance's worker name, written as {@code changed_by}. */
    final String workerName;
    /** Tells this instance's own NOTIFYs from other instances' ({@code change_origin}). */
    final String origin = UUID.randomUUID().toString();
    private final AtomicLong inlineStatements = new AtomicLong();
    private final AtomicLong backgroundStatements = new AtomicLong();

    /** Whether this instance's clock is the database's: bucket writes then read {@code clock_timestamp()}. */
    private final boolean databaseClock;

    GateDb(Db db, String workerName, boolean databaseClock) {
        this.db = db;
        this.workerName = workerName;
        this.databaseClock = databaseClock;
    }

    /**
     * The time a bucket write computes with: null (the statement reads the database's own clock)
     * when this instance runs on it, else the test clock's {@code now}.
     */
    OffsetDateTime bucketTime(Instant now) {
        return databaseClock ? null : ts(now);
    }

    <T> T inline(String what, Db.Work<T> work) {
        return run(false, what, work);
    }

    <T> T run(boolean background, String what, Db.Work<T> work) {
        (background ? backgroundStatements : inlineStatements).incrementAndGet();
        return db.autocommit(what, work);
    }

    /** Counts a statement run on a worker thread by another owner's class (the job store) for the gate. */
    void countInline() {
        inlineStatements.incrementAndGet();
    }

    long inlineStatements() {
        return inlineStatements.get();
    }

    long backgroundStatements() {
        return backgroundStatements.get();
    }

    static OffsetDateTime ts(Instant i) {
        return OffsetDateTime.ofInstant(i, ZoneOffset.UTC);
    }

    static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        if (t == null) {
            return null;
        }
        if (t.equals(OffsetDateTime.MAX)) {
            return Instant.MAX;
        }
        if (t.equals(OffsetDateTime.MIN)) {
            return Instant.MIN;
        }
        return t.toInstant();
    }

    static String cut(String s) {
        if (s == null) {
            return null;
        }
        return s.length() <= MAX_DETAIL ? s : s.substring(0, MAX_DETAIL - 1) + "…";
    }
}
