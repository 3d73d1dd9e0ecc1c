package dev.layover.core.internal.observe;

/** The SQL of {@link WorkerRegistry}: {@code layover.workers}, its only writer. */
final class WorkerSql {

    private WorkerSql() {}

    /**
     * A worker's heartbeat through {@code layover.worker_heartbeat} (its row written, rows an
     * hour stale deleted). Parameters: name, host, threads, version, limits (jsonb text), started.
     */
    static final String HEARTBEAT = "SELECT layover.worker_heartbeat(?, ?, ?, ?, ?::jsonb, ?)";

    /** A stopped worker's row. Parameter: name. */
    static final String DELETE = "DELETE FROM layover.workers WHERE worker_name = ?";
}
