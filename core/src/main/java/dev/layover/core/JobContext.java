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
}
