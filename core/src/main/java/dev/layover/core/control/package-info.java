/**
 * Operator control of the queue: cancel a job, pause and resume a job type or a key
 * ({@link dev.layover.core.control.JobControl}). See {@code docs/admission-and-control.md}.
 */
package dev.layover.core.control;
