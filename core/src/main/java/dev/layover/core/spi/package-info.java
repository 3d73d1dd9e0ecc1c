/**
 * The small, qualified SPI through which Layover's own modules ({@code layover-dlq},
 * {@code layover-replay-console}) reach core: {@link dev.layover.core.spi.Db} (connections for
 * Layover's own statements) and {@link dev.layover.core.spi.JobWrites} (the job-table writes the
 * dead-letter store needs; the job table's owner is core's job store). Not an API for
 * applications: the build's architecture test lets no other module use core's internals, and this
 * package may change with any release.
 */
package dev.layover.core.spi;
