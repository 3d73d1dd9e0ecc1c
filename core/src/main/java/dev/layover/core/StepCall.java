package dev.layover.core;

/**
 * The work of one step of a job ({@link JobContext#step(String, Class, StepCall)}): typically one
 * provider call. It runs at most once per finished step: once it returns, its result is stored
 * and every later run of the job gets the stored result instead of running it again. When it
 * throws, nothing is stored and it runs again on the job's next run (at least once: make the call
 * idempotent, or give the provider {@link JobContext#stepKey()} as its idempotency key).
 *
 * @param <T> the result type
 */
@FunctionalInterface
public interface StepCall<T> {

    /**
     * Does the step's work.
     *
     * @return the result, stored as JSON (Jackson, as args are); {@code null} is a result too
     * @throws Exception anything: it leaves the step unfinished and is passed on unchanged to the
     *     handler, which treats it as it would any exception (a provider error is classified)
     */
    T call() throws Exception;
}
