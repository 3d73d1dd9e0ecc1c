package dev.layover.core.provider;

import dev.layover.core.JobContext;
import dev.layover.core.outcome.Outcome;
import dev.layover.core.outcome.OutcomeException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * Calls the first endpoint, in order, that can answer: a primary model and its fallbacks, each
 * its own provider key with its own breaker, cooldown and bucket, shared by the fleet.
 *
 * <pre>{@code
 * FallbackChain<OpenAIClient> chain = FallbackChain.<OpenAIClient>builder()
 *         .endpoint("openai:gpt-4o-mini", openai)
 *         .endpoint("azure:gpt-4o-mini@westeurope", azure)
 *         .build();
 *
 * JobType<Translate> translate = JobType.of("translate", Translate.class, (args, ctx) -> {
 *     FallbackResult<String> r = chain.call(ctx, ep -> complete(ep.client(), args));
 *     save(args, r.value(), r.providerKey());
 *     return Outcome.done();
 * });
 * }</pre>
 *
 * <p>For each endpoint, in order:
 * <ul>
 *   <li>an active cooldown, an open breaker, a half-open breaker whose trial another worker holds,
 *       or a bucket without a free permit: passed over without a call;
 *   <li>the call returns: that is the answer (a breaker success for the key);
 *   <li>RATE_LIMITED (429): the key cools down (fleet-wide), the chain moves on; never a breaker
 *       failure;
 *   <li>OVERLOADED, TRANSIENT, QUOTA_EXHAUSTED, AUTH_REFUSED: a breaker failure of the key (and
 *       the cooldown an overload or a quota reset asks for); the chain moves on;
 *   <li>BAD_REQUEST ({@link Outcome.Rejected}): the request itself is wrong; the chain stops and
 *       the job is parked {@code rejected};
 *   <li>any other exception (the job's own error) or an {@link OutcomeException} carrying
 *       Retry, Snooze or Park: the chain stops and it is passed on unchanged.
 * </ul>
 * When no endpoint answered: if at least one was rate limited or passed over, the call throws
 * {@link Outcome.RateLimited} with the smallest wait any endpoint named (so the job is rescheduled,
 * no attempt spent); if every endpoint failed, it throws the last failure (an attempt spent, as
 * without a chain).
 *
 * <p>Database: each endpoint's state is the same as a job's with that provider key (see
 * {@code docs/provider-state.md}). The trail (every endpoint considered, and why) is returned in
 * the {@link FallbackResult} and, when the job's run ends in anything but done, appended to the
 * job's {@code provider_trail} (see {@link FallbackStep}); it moves to the dead letter when the job
 * is parked. Give the job type itself no provider key (or one of its own): the job-level key is
 * checked before the handler runs, which would keep a cooled-down primary from falling back.
 *
 * <p>Exceptions thrown by a call are classified with {@link ProviderClassifier#defaults()} unless
 * another classifier is set; a call may also throw an {@link OutcomeException} itself (for example
 * after classifying an HTTP response). Immutable and thread-safe.
 *
 * @param <C> the client type of the endpoints
 */
public final class FallbackChain<C> {

    /**
     * One call to one endpoint.
     *
     * @param <C> the client type
     * @param <R> the answer type
     */
    @FunctionalInterface
    public interface Call<C, R> {
        /**
         * @param endpoint the endpoint to call
         * @return the answer
         * @throws Exception a provider failure (classified) or the job's own error
         */
        R call(FallbackEndpoint<C> endpoint) throws Exception;
    }

    private final List<FallbackEndpoint<C>> endpoints;
    private final Function<Throwable, Optional<Outcome>> classifier;

    private FallbackChain(Builder<C> b) {
        this.endpoints = List.copyOf(b.endpoints);
        this.classifier = b.classifier;
    }

    /**
     * @param <C> the client type
     * @return a builder
     */
    public static <C> Builder<C> builder() {
        return new Builder<>();
    }

    /** @return the endpoints, in order */
    public List<FallbackEndpoint<C>> endpoints() {
        return endpoints;
    }

    /**
     * Calls the endpoints in order until one answers; see the class description.
     *
     * @param ctx the context Layover gave the handler
     * @param call the call
     * @param <R> the answer type
     * @return the answer, the endpoint that gave it and the trail
     * @throws OutcomeException when no endpoint answered (RateLimited, or the last failure) or one
     *     refused the request (Rejected)
     * @throws Exception the job's own error from a call, unchanged
     */
    public <R> FallbackResult<R> call(JobContext ctx, Call<C, R> call) throws Exception {
        return call(ctx, 0, call);
    }

    /**
     * Like {@link #call(JobContext, Call)}, counting {@code tokens} against the token limit of each
     * endpoint's bucket.
     *
     * @param ctx the context Layover gave the handler
     * @param tokens the call's token estimate
     * @param call the call
     * @param <R> the answer type
     * @return the answer, the endpoint that gave it and the trail
     * @throws OutcomeException when no endpoint answered or one refused the request
     * @throws Exception the job's own error from a call, unchanged
     */
    public <R> FallbackResult<R> call(JobContext ctx, long tokens, Call<C, R> call) throws Exception {
        Objects.requireNonNull(call, "call");
        ProviderCalls run = ctx.providerCalls();
        Clock clock = run.clock();
        List<FallbackStep> steps = new ArrayList<>();
        Duration shortest = null;
        boolean refused = false;
        Outcome lastFailure = null;
        for (FallbackEndpoint<C> ep : endpoints) {
            String key = ep.providerKey();
            ProviderCalls.Permission a = run.ask(key, tokens);
            if (a instanceof ProviderCalls.Permission.Wait w) {
                Duration d = EndpointSteps.until(clock, w.until());
                step(run, steps, key, EndpointSteps.skipped(w.reason()), w.detail(), d);
                refused = true;
                shortest = EndpointSteps.min(shortest, d);
                continue;
            }
            if (a instanceof ProviderCalls.Permission.Refused r) {
                Duration d = r.openUntil().equals(Instant.MAX) ? null : EndpointSteps.until(clock, r.openUntil());
                step(run, steps, key, "skipped_breaker_open", r.detail(), d);
                refused = true;
                shortest = EndpointSteps.min(shortest, d);
                continue;
            }
            ProviderCalls.Permission.Granted trial = (ProviderCalls.Permission.Granted) a;
            Outcome o;
            R value = null;
            try {
                value = call.call(ep);
                o = Outcome.done();
            } catch (OutcomeException e) {
                o = e.outcome();
            } catch (InterruptedException e) {
                run.record(key, trial, Outcome.retry("interrupted"));
                step(run, steps, key, "error", "interrupted", null);
                throw e;
            } catch (Exception e) {
                Optional<Outcome> classified = classifier.apply(e);
                if (classified.isEmpty()) {
                    run.record(key, trial, new Outcome.Retry(null, e, null));
                    step(run, steps, key, "error", e.toString(), null);
                    throw e;
                }
                o = classified.get();
            }
            Instant cooldown = run.record(key, trial, o);
            if (o instanceof Outcome.Done) {
                step(run, steps, key, "answered", null, null);
                return new FallbackResult<>(value, key, steps);
            }
            if (o instanceof Outcome.RateLimited rl) {
                Duration d = EndpointSteps.max(rl.retryAfter(),
                        cooldown == null ? null : EndpointSteps.until(clock, cooldown));
                step(run, steps, key, "rate_limited", rl.reason(), d);
                refused = true;
                shortest = EndpointSteps.min(shortest, d);
                continue;
            }
            if (o.kind().breaker() == Outcome.BreakerEffect.FAILURE) {
                Duration d = cooldown == null ? null : EndpointSteps.until(clock, cooldown);
                step(run, steps, key, EndpointSteps.kind(o), EndpointSteps.reason(o), d);
                shortest = EndpointSteps.min(shortest, d);
                lastFailure = o;
                continue;
            }
            if (o instanceof Outcome.Rejected rj) {
                step(run, steps, key, "rejected", rj.reason(), null);
                throw rj.toException();
            }
            step(run, steps, key, "error", String.valueOf(o), null);
            throw o.toException();
        }
        String summary = EndpointSteps.summary("no endpoint answered:", steps);
        if (refused || lastFailure == null) {
            throw new Outcome.RateLimited(shortest, summary).toException();
        }
        throw lastFailure.toException();
    }

    private void step(ProviderCalls run, List<FallbackStep> steps, String key, String result, String detail, Duration wait) {
        FallbackStep s = new FallbackStep(key, result, detail, wait, run.clock().instant());
        steps.add(s);
        run.trail(s);
    }








    /**
     * Builds a {@link FallbackChain}.
     *
     * @param <C> the client type
     */
    public static final class Builder<C> {
        private final List<FallbackEndpoint<C>> endpoints = new ArrayList<>();
        private Function<Throwable, Optional<Outcome>> classifier = ProviderClassifier.defaults()::outcomeOf;

        private Builder() {}

        /**
         * Adds the next endpoint.
         *
         * @param providerKey its provider key (unique within the chain)
         * @param client what the call uses to reach it
         * @return this builder
         */
        public Builder<C> endpoint(String providerKey, C client) {
            return endpoint(new FallbackEndpoint<>(providerKey, client));
        }

        /**
         * Adds the next endpoint.
         *
         * @param endpoint the endpoint
         * @return this builder
         */
        public Builder<C> endpoint(FallbackEndpoint<C> endpoint) {
            Objects.requireNonNull(endpoint, "endpoint");
            for (FallbackEndpoint<C> e : endpoints) {
                if (e.providerKey().equals(endpoint.providerKey())) {
                    throw new IllegalArgumentException("provider key " + endpoint.providerKey() + " is in the chain twice");
                }
            }
            endpoints.add(endpoint);
            return this;
        }

        /**
         * @param classifier turns a call's exception into an outcome; empty means the job's own
         *     error. Default {@code ProviderClassifier.defaults()::outcomeOf}
         * @return this builder
         */
        public Builder<C> classifier(Function<Throwable, Optional<Outcome>> classifier) {
            this.classifier = Objects.requireNonNull(classifier, "classifier");
            return this;
        }

        /** @return the chain */
        public FallbackChain<C> build() {
            if (endpoints.isEmpty()) {
                throw new IllegalStateException("a fallback chain needs at least one endpoint");
            }
            return new FallbackChain<>(this);
        }
    }
}
