package dev.layover.core;

import dev.layover.core.outcome.Outcome;
import dev.layover.core.tokens.TokenUsage;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Callable;

/**
 * Provider calls made outside jobs (a web request a person waits for: a chat answer, an
 * autocomplete) admitted by the same fleet-wide state as the jobs of their key: its cooldown, its
 * breaker, its bucket (requests and tokens). Obtained from {@code Layover#interactive()} (and, in
 * Spring Boot, as a bean); thread-safe; usable from any thread. {@code docs/interactive.md}.
 *
 * <pre>{@code
 * String answer = layover.interactive().call("openai:gpt-4o-mini", 800, Duration.ofMillis(200),
 *         () -> client.chat().completions().create(params).choices().get(0).message().content().orElse(""));
 * }</pre>
 *
 * <p>Interactive first: while a key's interactive calls are arriving, the pick leaves a share of
 * its bucket free for them ({@code InteractiveSettings}, default 0.25) and takes it back one window
 * (1 s) after they stop. An interactive call's 429, overload or reported usage changes the key's
 * state exactly as a job's call does: the next pick of every worker sees it.
 *
 * <p>Bad input and edge cases:
 * <ul>
 *   <li>A negative token estimate, a negative wait, a null key: {@link IllegalArgumentException}
 *       (null: {@link NullPointerException}).
 *   <li>A key with no state yet: admitted (no limit is known), and its state rows are created as
 *       for a job's first call, so that what the call teaches is recorded.
 *   <li>A wait of zero: one try, no waiting.
 *   <li>A call that hangs: {@link #call} does not interrupt it (an SDK's own timeout ends it: set
 *       one); its permit was spent at admission, so a hanging call holds nothing back but the one
 *       permit and its token estimate, which drain from the bucket as any spent permit does.
 *   <li>A caller that never records its outcome: nothing is leaked. A bucket permit is spent when
 *       it is admitted (the bucket's {@code tat} moved: there is no lease to give back), and the
 *       token estimate stays the call's cost; a breaker trial the permit holds expires after the
 *       breaker's trial timeout (60 s by default), when another caller or a job claims it.
 * </ul>
 */
public interface InteractiveCalls {

    /**
     * Waits at most {@code maxWait} for a permit of {@code providerKey}: not while it cools down or
     * its breaker is open; a request permit and {@code tokenEstimate} tokens of its bucket, when it
     * has one (not limited by the share left for interactive calls). Waits only when the wait
     * ends within {@code maxWait} (a cooldown ending later, an open breaker: at once).
     *
     * @param providerKey the provider key, as the jobs of the same provider name it
     * @param tokenEstimate the call's combined token estimate (input + output; 0: none); reserved
     *     from the bucket's token dimensions, settled by {@link Permit#record(Outcome, TokenUsage)}
     * @param maxWait the longest wait for the permit (zero: one try)
     * @return the permit: call now, then record the outcome
     * @throws NotAdmittedException when not admitted within the wait (the provider must not be called)
     * @throws IllegalArgumentException when {@code tokenEstimate} or {@code maxWait} is negative
     */
    Permit admit(String providerKey, long tokenEstimate, Duration maxWait);

    /**
     * Admits ({@link #admit}), calls, and records: the answer is a success; whatever the call
     * throws is classified exactly as a job handler's exception is (the instance's exception
     * classifier: the SDK adapters' rules, or the one set with {@code Layover.Builder#exceptionClassifier}),
     * and recorded. Usage is not read from the answer: record it with {@link #admit} and
     * {@link Permit#record(Outcome, TokenUsage)} when the token bucket should learn it.
     *
     * @param providerKey the provider key
     * @param tokenEstimate the call's combined token estimate (0: none)
     * @param maxWait the longest wait for the permit (zero: one try)
     * @param call the call; not interrupted by Layover
     * @param <T> the answer's type
     * @return the answer
     * @throws NotAdmittedException when not admitted (the call was not made)
     * @throws CallFailedException when the call was made and failed (its cause is what it threw)
     * @throws IllegalArgumentException when {@code tokenEstimate} or {@code maxWait} is negative
     */
    <T> T call(String providerKey, long tokenEstimate, Duration maxWait, Callable<T> call);

    /**
     * One admitted interactive call. Record its outcome once; a second record is ignored. A permit
     * never recorded leaks nothing (see {@link InteractiveCalls}).
     */
    interface Permit {

        /** @return the provider key */
        String providerKey();

        /** @return how long the admission waited */
        Duration waited();

        /** @return whether this call is its key's half-open breaker trial (its outcome closes or reopens the breaker) */
        boolean trial();

        /**
         * Records what the call gave, as a job's call records it: a success, a rate limit (a
         * cooldown for the fleet, a learned pace), an overload, ... ({@link Outcome}), and the
         * usage it reported, which replaces the token estimate in the key's bucket.
         *
         * @param outcome what the call gave ({@link Outcome#done()} for an answer)
         * @param usage what the provider reported, or null
         * @return the key's cooldown end when the outcome began one, else null
         */
        Instant record(Outcome outcome, TokenUsage usage);

        /**
         * Records a success with the usage the provider reported.
         *
         * @param usage what the provider reported, or null
         */
        default void succeeded(TokenUsage usage) {
            record(Outcome.done(), usage);
        }

        /**
         * Records a failure, classified exactly as a job handler's exception is.
         *
         * @param failure what the call threw
         * @return the classification, as a handler's outcome
         */
        Outcome failed(Throwable failure);
    }
}
