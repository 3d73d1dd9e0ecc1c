/**
 * The record of finished jobs: the table {@code layover.job_history} (written by the engine in
 * the statement that removes each job) and its retention, {@link
 * dev.layover.core.history.JobHistoryRetention}. See {@code docs/observability.md}.
 */
package dev.layover.core.history;
