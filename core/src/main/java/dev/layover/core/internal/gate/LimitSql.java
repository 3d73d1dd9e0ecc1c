package dev.layover.core.internal.gate;

/** The SQL of {@link Limits}. */
final class LimitSql {

    private LimitSql() {}

    /**
     * A concurrency limit as configured by a worker ({@code layover.configure_concurrency}: its row, and
     * its copies when it is a pattern). Parameters: key or pattern, max in flight, worker.
     */
    static final String CONFIGURE_CONCURRENCY = "SELECT layover.configure_concurrency(?::text, ?::int, ?::text)";
}
