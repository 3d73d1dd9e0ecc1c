/**
 * The dead-letter store of Layover: {@link dev.layover.dlq.DeadLetters} finds, counts, reads,
 * replays, discards and moves back parked jobs; {@link dev.layover.dlq.DeadLetterRetention} purges
 * old replayed and discarded ones; {@link dev.layover.dlq.RecoverySweep} replays parked jobs by
 * itself when their provider recovers (and sends one trial while it stays down);
 * {@link dev.layover.dlq.AuditLog} records who did what. Both background behaviours are plugins:
 * {@code Layover.builder(ds).plugin(RecoverySweep.plugin()).plugin(DeadLetterRetention.plugin())}.
 *
 * <p>Tables: {@code layover.dead_letters} (written by core when it parks a job),
 * {@code layover.audit_log} and {@code layover.recovery_state}. See {@code docs/dead-letters.md}.
 */
package dev.layover.dlq;
