package dev.layover.core;

import dev.layover.core.provider.ApiKeyPool;
import dev.layover.core.provider.FallbackChain;
import dev.layover.core.provider.Provider;
import dev.layover.core.provider.ProviderCalls;
import dev.layover.core.provider.RateLimitHeaders;
import dev.layover.core.tokens.TokenEstimate;
import dev.layover.core.tokens.TokenUsage;
import java.time.Instant;
import java.util.Optional;

/**
 * What a handler knows about the run in progress.
 */
public interface JobContext {

    /** @return the job's id (its idempotency key, if it was enqueued with one); stable across retries and replays */
    String jobId();

    /** @return the job type's name */
    String jobType();

    /** @return which attempt this is, from 1: attempts already spent plus one. Rate-limit reschedules do not count */
    int attempt();

    /** @return the time the job was due to run */
    Instant runAt();

    /** @return the job's provider key (e.g. {@code openai:gpt-4o-mini}), or {@code null} */
    String providerKey();

    /**
     * Whether the worker is shutting down; a long handler may check it and return
     * {@link dev.layover.core.outcome.Outcome#snooze(java.time.Duration)} to give the job back.
     *
     * @return true while stopping
     */
    boolean isStopping();

    /**
     * Whether an operator asked this job to stop ({@code JobControl.cancel} while it runs). Layover
     * never interrupts a handler for a cancel: a long handler checks this between steps and
     * returns (any outcome but done parks the job {@code cancelled}; done means the work finished
     * anyway). Seen within about a second of the request.
     *
     * @return true once a cancel was requested
     */
    default boolean isCancelled() {
        return false;
    }

    /**
     * @return the job's deadline ({@code EnqueueOptions.withDeadline}) when this worker knows it,
     *     else {@code null}
     */
    default Instant deadline() {
        return null;
    }

    /**
     * @return the keys besides the provider key whose limits and pauses this job is subject to
     *     ({@code JobType.Builder#limitKeys}), possibly empty
     */
    default java.util.List<String> limitKeys() {
        return java.util.List.of();
    }

    /**
     * The fleet-wide provider state this run's own calls of other provider keys pass through
     * ({@link FallbackChain} and {@link ApiKeyPool} use it).
     *
     * @return the run's provider calls
     * @throws IllegalStateException for a context that Layover did not make (a test's own)
     */
    default ProviderCalls providerCalls() {
        throw new IllegalStateException("providerCalls() needs the JobContext Layover passed to the handler");
    }

    /**
     * Reports what this run's provider call used, read from the SDK's own response object
     * ({@link TokenUsage#of(Object)}: openai-java, anthropic-java, google-genai, the Bedrock runtime
     * client; a {@link TokenUsage} is taken as it is). After the run, the usage replaces the
     * reservation taken before the call in every bucket it was taken from, fleet-wide, in one
     * statement: the unused part given back, an under-estimate charged (at most one minute of the
     * dimension's limit per call); the job's history row keeps it ({@code input_tokens},
     * {@code output_tokens}, {@code cached_input_tokens}). A handler that makes several calls
     * reports each; they add up. A response without usage (or unreadable) changes nothing: the
     * reservation stays the call's cost. Never throws for a bad response.
     *
     * <p>A context Layover did not make (a test's own) only reads the usage.
     *
     * @param response the SDK's response (or stream event carrying the usage), or a {@link TokenUsage}
     * @return the usage read, empty when the response has none
     */
    default Optional<TokenUsage> reportUsage(Object response) {
        return response instanceof TokenUsage u ? Optional.of(u) : TokenUsage.of(response);
    }

    /**
     * Reports what this run's provider call used, read from a raw HTTP response body (one JSON
     * document, a JSON array, or a server-sent event stream; {@link TokenUsage#fromJson}). As
     * {@link #reportUsage(Object)} otherwise.
     *
     * @param provider whose convention the body is in ({@link Provider#UNKNOWN}: told from its shape)
     * @param body the response body
     * @return the usage read, empty when the body has none
     */
    default Optional<TokenUsage> reportUsage(Provider provider, String body) {
        return TokenUsage.fromJson(provider, body).flatMap(u -> reportUsage((Object) u));
    }

    /**
     * Reports the provider's own count of what remains of its token limits, from a response's
     * rate-limit headers ({@link RateLimitHeaders#read}: OpenAI's {@code x-ratelimit-*-tokens},
     * Anthropic's {@code anthropic-ratelimit-{tokens,input-tokens,output-tokens}-*}). After the run
     * (and its usage report), the key's bucket is tightened to it, fleet-wide, in one statement: per
     * token dimension the provider reported, the bucket holds at least the tokens the provider counts
     * as used (its limit minus what remains). It never loosens the bucket, which may know of calls
     * the provider has not seen yet; this corrects drift from calls made outside Layover or
     * under-counted ones. A context Layover did not make ignores it.
     *
     * @param headers the headers read
     */
    default void reportLimits(RateLimitHeaders headers) {
    }

    /**
     * A better estimate of this run's call, known only in the handler (the prompt as finally
     * built, the ceiling it will ask for): the reservation taken before the handler ran moves to
     * it at once, fleet-wide (the difference given back or charged, bounded as a report is); the
     * call is not delayed for it, later calls wait for a charge. Refine before the call; the
     * reported usage replaces it after. A context Layover did not make ignores it.
     *
     * @param estimate the refined estimate
     * @throws dev.layover.core.outcome.OutcomeException rejecting the job (it parks {@code rejected}
     *     with the numbers) when the estimate is larger than a dimension of its key's bucket can
     *     ever admit
     */
    default void refineEstimate(TokenEstimate estimate) {
    }

    /**
     * Runs a step of the job once: the first run that finishes it stores its result, and every
     * later run of this job (after a rate-limit reschedule, a retry, a crash, a replay of its dead
     * letter) gets the stored result at once without calling. See {@code docs/steps.md} and
     * {@link #step(StepOptions, Class, StepCall)}.
     *
     * <pre>{@code
     * Translation t = ctx.step("segment-7", Translation.class, () -> translate(client, segment7));
     * }</pre>
     *
     * @param name the step's name, unique within the job
     * @param type the result's type (stored as JSON with the job type's mapper)
     * @param call the work, typically one provider call
     * @param <T> the result type
     * @return the result, stored or just made
     * @throws StepException when the step cannot be used as asked (its outcome says what becomes of the job)
     * @throws Exception whatever {@code call} threw, unchanged (nothing stored)
     */
    default <T> T step(String name, Class<T> type, StepCall<T> call) throws Exception {
        return step(StepOptions.named(name), type, call);
    }

    /**
     * Runs a step of the job once ({@link #step(String, Class, StepCall)}) with its own settings: a
     * provider key that admits it when it starts, a token estimate, a validity.
     *
     * <p>Database: the first step of a run reads the job's stored steps ({@code layover.job_steps},
     * one {@code SELECT} per run, none for a run without steps); a step that finishes writes one
     * row ({@code INSERT .. ON CONFLICT}, its result as jsonb, {@code finished_at} and
     * {@code started_at} on the database's clock, the usage reported inside it); a stored step
     * reused writes nothing. With a {@link StepOptions#providerKey}, the key admits the step as it
     * would a fallback endpoint's call (breaker, cooldown, bucket permit and tokens: {@code
     * layover.take}; the first step on the job's own key uses the permit of its pick); a key that
     * says "not now" ends the run: the job is rescheduled (no attempt spent) to when the key admits
     * and resumes at this step; the step's outcome teaches its key (a 429's cooldown, a breaker
     * failure), not the job's. The rows are removed with the job when it is done, kept with its
     * dead letter when it parks.
     *
     * <p>A context Layover did not make (a test's own) runs {@code call} every time and stores nothing.
     *
     * @param step the step's name and settings
     * @param type the result's type
     * @param call the work
     * @param <T> the result type
     * @return the result, stored or just made
     * @throws StepException when the step cannot be used as asked
     * @throws Exception whatever {@code call} threw, unchanged (nothing stored)
     */
    default <T> T step(StepOptions step, Class<T> type, StepCall<T> call) throws Exception {
        return call.call();
    }

    /**
     * The idempotency key of the step that runs now: the same on every run of this job's step
     * (derived from the job type, the job id and the step's name, which a replay keeps), different
     * for every other step. Give it to a provider that accepts one, so a step that ran but did not
     * finish (a crash after the call) is not charged twice.
     *
     * @return the key, {@code layover-} and 40 hex digits
     * @throws IllegalStateException outside a step, or in a context Layover did not make
     */
    default String stepKey() {
        throw new IllegalStateException("stepKey() is known inside a step of the context Layover passed to the handler");
    }

    /**
     * A durable sleep: ends the run here and resumes the job after {@code duration}, holding no
     * thread and spending no attempt. The sleep is stored as a step of its own name (kind
     * {@code sleep}, its end {@code wake_at} on the database's clock), so the resumed run passes it
     * and goes on; a run that comes back before its end (a retry) sleeps again until then.
     *
     * <p>Database: the first time, one row of {@code layover.job_steps}, then the job row moves to
     * the end ({@code last_reschedule_reason = 'sleep'}), not counted as a reschedule; the pick
     * admits it again then as any due job. Nothing when the sleep is already over. A context
     * Layover did not make returns at once.
     *
     * @param name the sleep's name, unique among the job's steps
     * @param duration how long; zero or more
     * @throws StepException when the name is a stored step of another kind, or used twice in a run
     */
    default void sleep(String name, java.time.Duration duration) {
    }

    /**
     * The group this job is the callback of ({@link Layover#enqueueGroup}): every member with its
     * end ({@code done} or {@code discarded}) and its handler's result, and the counts. A callback
     * runs once the group has settled, so no member is pending or parked then.
     *
     * <p>Database: two reads ({@code layover.groups}, {@code layover.group_members}) per call, none
     * unless called. A context Layover did not make returns empty.
     *
     * @return the group, or empty when this job is no group's callback
     */
    default Optional<GroupResult> group() {
        return Optional.empty();
    }

    /**
     * Waits for a named signal without holding a thread or spending an attempt: the first time,
     * the run ends here (the exception this throws must be let through), and the job waits until
     * the signal arrives ({@link Layover#signal}, or {@code SELECT layover.signal(...)} from any
     * language) or {@code timeout} passes; its next run comes back here and gets the
     * {@link Signal}: received with its payload, or timed out. Code before the call runs again on
     * that run: put it in steps.
     *
     * <p>Database: the first time, one row of {@code layover.job_steps} (kind {@code signal},
     * {@code wake_at} the timeout on the database's clock), then the job row waits
     * ({@code last_reschedule_reason = 'signal'}), not counted as a reschedule. The signal stores
     * its payload in that row and makes the job due. A context Layover did not make throws.
     *
     * @param name the signal's name, unique among the job's steps (1-200 characters)
     * @param timeout how long to wait; positive
     * @return the signal, on the run after the wait ended
     * @throws StepException when the name is a stored step of another kind, or used twice in a run
     */
    default Signal awaitSignal(String name, java.time.Duration timeout) {
        throw new IllegalStateException("awaitSignal is known only in the context Layover passes to a handler");
    }
}
