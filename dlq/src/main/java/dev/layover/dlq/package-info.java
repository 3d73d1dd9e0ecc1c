/**
 * The dead-letter store of Layover: {@link dev.layover.dlq.DeadLetters} finds, counts, reads,
 * replays, discards and moves back parked jobs; {@link dev.layover.dlq.DeadLetterRetention} purges
 * old replayed and discarded ones; {@link dev.layover.dlq.AuditLog} records who did what.
 *
 * <p>Tables: {@code layover.dead_letters} (written by core when it parks a job) and
 * {@code layover.audit_log}. See {@code docs/dead-letters.md}.
 */
package dev.layover.dlq;
