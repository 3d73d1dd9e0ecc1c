package dev.layover.samples.translate;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import javax.sql.DataSource;

/**
 * The demo's credits: accounts with a balance, and at most one charge per job, in a schema of the
 * demo's own ({@value #SCHEMA}; Layover knows nothing of it).
 *
 * <pre>
 * layover_demo.accounts     (id, balance CHECK (balance &gt;= 0))
 * layover_demo.charges      (job_id PRIMARY KEY, account_id, amount, at)
 * layover_demo.translations (job_id PRIMARY KEY, document_id, target, segments, provider_key, at)
 * </pre>
 *
 * <p><b>The charge is one statement</b> ({@link #charge}): it locks the account row, inserts the
 * charge when the balance covers it ({@code ON CONFLICT (job_id) DO NOTHING}), and debits the
 * balance only if that insert happened. So:
 * <ul>
 *   <li>a retry or a replay of a job that was already charged inserts nothing and debits nothing
 *       (the job id is stable across retries and replays);
 *   <li>two workers charging the same job at once: the second waits for the account lock, then
 *       meets the first one's charge row and does nothing;
 *   <li>two jobs racing for the last credits of one account: the second waits for the lock, then
 *       sees the balance the first one left, and is refused;
 *   <li>the charge row and the debit are both written or neither (the statement checks it and
 *       throws otherwise; the {@code CHECK} is the last guard against an overdraft).
 * </ul>
 * The translation job charges <em>after</em> a successful translation, in the same transaction
 * that stores it: a customer pays exactly when the result is kept.
 */
public final class Credits {

    /** The demo's schema. */
    public static final String SCHEMA = "layover_demo";

    /** The charge statement; parameters: account, job id, cost, cost. */
    static final String CHARGE = """
            WITH account AS (
                SELECT id, balance FROM layover_demo.accounts WHERE id = ? FOR UPDATE
            ), charge AS (
                INSERT INTO layover_demo.charges (job_id, account_id, amount, at)
                SELECT ?, a.id, ?, now() FROM account a WHERE a.balance >= ?
                ON CONFLICT (job_id) DO NOTHING
                RETURNING account_id, amount
            ), debit AS (
                UPDATE layover_demo.accounts a SET balance = a.balance - c.amount
                FROM charge c
                WHERE a.id = c.account_id AND a.balance >= c.amount
                RETURNING a.balance
            )
            SELECT (SELECT count(*) FROM charge) AS charged,
                   (SELECT count(*) FROM debit) AS debited,
                   (SELECT balance FROM debit) AS balance_after,
                   (SELECT balance FROM account) AS balance_before""";

    /** What a charge did. */
    public enum Result {
        /** Charged now: the charge row inserted and the balance debited. */
        CHARGED,
        /** This job was charged before (a retry, a replay, or a racing worker): nothing changed. */
        ALREADY_CHARGED,
        /** The balance does not cover the cost: nothing changed. */
        INSUFFICIENT,
        /** There is no such account: nothing changed. */
        NO_ACCOUNT
    }

    /**
     * @param result what happened
     * @param balance the account's balance after the statement ({@code -1} without an account)
     */
    public record Charge(Result result, long balance) {
        /** @return whether the job is paid for (now or before) */
        public boolean paid() {
            return result == Result.CHARGED || result == Result.ALREADY_CHARGED;
        }
    }

    private Credits() {}

    /**
     * Drops and creates the demo schema, and opens the accounts.
     *
     * @param dataSource the database
     * @param balances account id to opening balance
     * @throws SQLException on a database error
     */
    public static void createSchema(DataSource dataSource, Map<String, Long> balances) throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("DROP SCHEMA IF EXISTS layover_demo CASCADE");
            st.execute("CREATE SCHEMA layover_demo");
            st.execute("""
                    CREATE TABLE layover_demo.accounts (
                        id      text   PRIMARY KEY,
                        balance bigint NOT NULL CHECK (balance >= 0))""");
            st.execute("""
                    CREATE TABLE layover_demo.charges (
                        job_id     text        PRIMARY KEY,
                        account_id text        NOT NULL REFERENCES layover_demo.accounts,
                        amount     bigint      NOT NULL CHECK (amount > 0),
                        at         timestamptz NOT NULL DEFAULT now())""");
            st.execute("""
                    CREATE TABLE layover_demo.translations (
                        job_id       text        PRIMARY KEY,
                        document_id  text        NOT NULL,
                        target       text        NOT NULL,
                        segments     jsonb       NOT NULL,
                        provider_key text        NOT NULL,
                        at           timestamptz NOT NULL DEFAULT now())""");
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO layover_demo.accounts (id, balance) VALUES (?, ?)")) {
                for (Map.Entry<String, Long> e : balances.entrySet()) {
                    ps.setString(1, e.getKey());
                    ps.setLong(2, e.getValue());
                    ps.addBatch();
                }
                ps.executeBatch();
            }
        }
    }

    /**
     * Charges a job once, on the caller's connection (inside its transaction, if one is open).
     *
     * @param c the connection
     * @param jobId the job's id: at most one charge per id, ever
     * @param accountId the account to debit
     * @param cost the credits to take; positive
     * @return what happened
     * @throws SQLException on a database error
     * @throws IllegalStateException if the charge row and the debit did not both happen (never
     *     expected; the caller must roll back)
     */
    public static Charge charge(Connection c, String jobId, String accountId, long cost) throws SQLException {
        if (cost <= 0) {
            throw new IllegalArgumentException("a cost must be positive, was " + cost);
        }
        long charged;
        long debited;
        long after;
        Long before;
        try (PreparedStatement ps = c.prepareStatement(CHARGE)) {
            ps.setString(1, accountId);
            ps.setString(2, jobId);
            ps.setLong(3, cost);
            ps.setLong(4, cost);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                charged = rs.getLong("charged");
                debited = rs.getLong("debited");
                after = rs.getLong("balance_after");
                before = rs.getObject("balance_before") == null ? null : rs.getLong("balance_before");
            }
        }
        if (charged != debited) {
            throw new IllegalStateException("charge of job " + jobId + ": " + charged + " charge rows but " + debited
                    + " debits; roll back");
        }
        if (charged == 1) {
            return new Charge(Result.CHARGED, after);
        }
        if (before == null) {
            return new Charge(Result.NO_ACCOUNT, -1);
        }
        // a new statement sees a charge that a racing worker committed while this one waited for the lock
        try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM layover_demo.charges WHERE job_id = ?")) {
            ps.setString(1, jobId);
            try (ResultSet rs = ps.executeQuery()) {
                return new Charge(rs.next() ? Result.ALREADY_CHARGED : Result.INSUFFICIENT, before);
            }
        }
    }

    /**
     * @param dataSource the database
     * @param accountId an account
     * @return its balance now, or {@code -1} when there is no such account
     * @throws SQLException on a database error
     */
    public static long balance(DataSource dataSource, String accountId) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT balance FROM layover_demo.accounts WHERE id = ?")) {
            ps.setString(1, accountId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(1) : -1;
            }
        }
    }

    /**
     * Stores a job's translation once (a second store of the same job changes nothing).
     *
     * @param c the connection (the charge's transaction)
     * @param jobId the job id
     * @param documentId the document
     * @param target the target language
     * @param segmentsJson the translated segments, a JSON array
     * @param providerKey the endpoint that answered
     * @return whether it was stored now
     * @throws SQLException on a database error
     */
    public static boolean storeTranslation(Connection c, String jobId, String documentId, String target,
            String segmentsJson, String providerKey) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("""
                INSERT INTO layover_demo.translations (job_id, document_id, target, segments, provider_key)
                VALUES (?, ?, ?, ?::jsonb, ?) ON CONFLICT (job_id) DO NOTHING""")) {
            ps.setString(1, jobId);
            ps.setString(2, documentId);
            ps.setString(3, target);
            ps.setString(4, segmentsJson);
            ps.setString(5, providerKey);
            return ps.executeUpdate() == 1;
        }
    }

    /**
     * @param dataSource the database
     * @param jobId a job id
     * @return whether a translation is stored for it (so it was also charged)
     * @throws SQLException on a database error
     */
    public static boolean translated(DataSource dataSource, String jobId) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT 1 FROM layover_demo.translations WHERE job_id = ?")) {
            ps.setString(1, jobId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }
}
