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
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * One provider reached with several API keys: calls are spread round-robin over the keys that are
 * not cooling down, each key with its own fleet-wide cooldown, breaker and (optional) bucket.
 *
 * <pre>{@code
 * ApiKeyPool openai = ApiKeyPool.builder("openai")
 *         .key("team-a", System.getenv("OPENAI_KEY_A"))
 *         .key("team-b", System.getenv("OPENAI_KEY_B"))
 *         .build();
 *
 * JobType<Translate> translate = JobType.of("translate", Translate.class, (args, ctx) -> {
 *     ApiKeyPool.Result<String> r = openai.call(ctx, key -> complete(clientFor(key.secret()), args));
 *     save(args, r.value());
 *     return Outcome.done();
 * });
 * }</pre>
 *
 * <p>The handler gets a {@link Key} (its name and its secret) for one call and the pool reports
 * the call's outcome: exceptions are classified ({@link ProviderClassifier#defaults()} unless
 * {@link Builder#classifier} says otherwise), or the call throws an {@link OutcomeException}
 * itself. Per key, in round-robin order starting at the next key of this JVM's rotation:
 * <ul>
 *   <li>cooling down, breaker open, half-open with the trial elsewhere, or no bucket permit:
 *       passed over without a call;
 *   <li>the call returns: that is the answer (a breaker success for the key);
 *   <li>RATE_LIMITED (429): the key cools down fleet-wide; the next key is tried;
 *   <li>QUOTA_EXHAUSTED (a per-day limit, a spent budget): the key sits out until its reset
 *       (the provider's, or {@link Builder#quotaSitOut} from now when it named none), fleet-wide,
 *       while the others carry on; the next key is tried;
 *   <li>AUTH_REFUSED (a revoked key): a breaker failure of the key (its breaker opens and keeps it
 *       out; its trial tells when it works again); the next key is tried;
 *   <li>OVERLOADED, TRANSIENT (the provider itself is sick; another key would not help),
 *       BAD_REQUEST, or the job's own error: no other key is tried; passed on unchanged.
 * </ul>
 * When no key answered: if every key called refused the credentials and none was passed over,
 * the call throws the last {@link Outcome.AuthRefused}; otherwise it throws
 * {@link Outcome.RateLimited} with the earliest moment a key comes back, so the job is rescheduled
 * then, without spending an attempt.
 *
 * <p><b>Secrets</b>: a key's secret stays in this object. The database and the job's trail only
 * ever hold the key's state key, {@code <pool name>#<key name>} (for example {@code openai#team-a}),
 * which is also how to give one key a bucket ({@code Layover.Builder#bucket("openai#team-a", ..)}) or
 * look at its cooldown in {@code layover.provider_keys}. Texts the pool records (trail details,
 * the reasons of the outcomes it throws) have every secret of the pool replaced by {@code ***}.
 * {@link Key#toString()} shows the name only.
 *
 * <p>Round-robin is per JVM (a counter in this object): every instance spreads its own calls over
 * the keys, so the fleet's calls are spread too, without a round trip. Give the job type a provider
 * key of its own (for example {@code openai:gpt-4o}) for the limits of the provider as a whole; the
 * pool's keys are separate state keys. Immutable and thread-safe.
 */
public final class ApiKeyPool {

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:@\\-]{0,99}");
    private static final String MASK = "***";

    /**
     * One API key of a pool.
     *
     * @param name its name (what the database and the trail show)
     * @param secret the key itself (never stored, never shown)
     */
    public record Key(String name, String secret) {

        /**
         * Checks the name and the secret.
         *
         * @param name its name (what the database and the trail show)
         * @param secret the key itself (never stored, never shown)
         */
        public Key {
            if (name == null || !NAME.matcher(name).matches()) {
                throw new IllegalArgumentException("an API key name must be 1-100 characters of letters, digits and "
                        + ". _ : @ - (starting with a letter or digit), was: " + name);
            }
            if (secret == null || secret.isEmpty()) {
                throw new IllegalArgumentException("the secret of API key '" + name + "' is empty");
            }
        }

        /** @return the name only: the secret is never part of a text Layover writes */
        @Override
        public String toString() {
            return "ApiKey[" + name + "]";
        }
    }

    /**
     * What a pooled call gave.
     *
     * @param value the answer
     * @param keyName the name of the key that answered
     * @param stateKey its state key ({@code <pool>#<key>})
     * @param trail every key considered in this call, and why it was passed over
     * @param <R> the answer type
     */
    public record Result<R>(R value, String keyName, String stateKey, List<FallbackStep> trail) {}

    /**
     * One call with one key.
     *
     * @param <R> the answer type
     */
    @FunctionalInterface
    public interface Call<R> {
        /**
         * @param key the key to use
         * @return the answer
         * @throws Exception a provider failure (classified) or the job's own error
         */
        R call(Key key) throws Exception;
    }

    private final String name;
    private final List<Key> keys;
    private final Function<Throwable, Optional<Outcome>> classifier;
    private final Duration quotaSitOut;
    private final AtomicLong next = new AtomicLong();

    private ApiKeyPool(Builder b) {
        this.name = b.name;
        this.keys = List.copyOf(b.keys);
        this.classifier = b.classifier;
        this.quotaSitOut = b.quotaSitOut;
    }

    /**
     * @param name the pool's name, the prefix of its keys' state keys (e.g. {@code openai} or
     *     {@code openai:gpt-4o})
     * @return a builder
     */
    public static Builder builder(String name) {
        return new Builder(name);
    }

    /** @return the pool's name */
    public String name() {
        return name;
    }

    /** @return the names of its keys, in order */
    public List<String> keyNames() {
        return keys.stream().map(Key::name).toList();
    }

    /**
     * @param keyName a key's name
     * @return its state key: {@code <pool name>#<key name>}
     */
    public String stateKey(String keyName) {
        return name + "#" + keyName;
    }

    /**
     * Calls with the next key that can be used; see the class description.
     *
     * @param ctx the context Layover gave the handler
     * @param call the call
     * @param <R> the answer type
     * @return the answer and the key that gave it
     * @throws OutcomeException when no key answered (RateLimited until the earliest key is back, or
     *     AuthRefused), or the provider failed in a way another key would not mend
     * @throws Exception the job's own error from a call, unchanged
     */
    public <R> Result<R> call(JobContext ctx, Call<R> call) throws Exception {
        return call(ctx, 0, call);
    }

    /**
     * Like {@link #call(JobContext, Call)}, counting {@code tokens} against each key's bucket.
     *
     * @param ctx the context Layover gave the handler
     * @param tokens the call's token estimate
     * @param call the call
     * @param <R> the answer type
     * @return the answer and the key that gave it
     * @throws OutcomeException when no key answered, or the provider failed
     * @throws Exception the job's own error from a call, unchanged
     */
    public <R> Result<R> call(JobContext ctx, long tokens, Call<R> call) throws Exception {
        Objects.requireNonNull(call, "call");
        ProviderCalls run = ctx.providerCalls();
        Clock clock = run.clock();
        List<FallbackStep> steps = new ArrayList<>();
        int n = keys.size();
        int start = (int) Math.floorMod(next.getAndIncrement(), (long) n);
        Duration soonest = null;
        boolean passedOver = false;
        int called = 0;
        int authRefused = 0;
        Outcome.AuthRefused lastAuth = null;
        for (int i = 0; i < n; i++) {
            Key key = keys.get((start + i) % n);
            String state = stateKey(key.name());
            ProviderCalls.Permission a = run.ask(state, tokens);
            if (a instanceof ProviderCalls.Permission.Wait w) {
                Duration d = EndpointSteps.until(clock, w.until());
                step(run, steps, state, EndpointSteps.skipped(w.reason()), w.detail(), d);
                passedOver = true;
                soonest = EndpointSteps.min(soonest, d);
                continue;
            }
            if (a instanceof ProviderCalls.Permission.Refused r) {
                Duration d = r.openUntil().equals(Instant.MAX) ? null : EndpointSteps.until(clock, r.openUntil());
                step(run, steps, state, "skipped_breaker_open", r.detail(), d);
                passedOver = true;
                soonest = EndpointSteps.min(soonest, d);
                continue;
            }
            ProviderCalls.Permission.Granted trial = (ProviderCalls.Permission.Granted) a;
            called++;
            Outcome o;
            R value = null;
            try {
                value = call.call(key);
                o = Outcome.done();
            } catch (OutcomeException e) {
                o = e.outcome();
            } catch (InterruptedException e) {
                run.record(state, trial, Outcome.retry("interrupted"));
                step(run, steps, state, "error", "interrupted", null);
                throw e;
            } catch (Exception e) {
                Optional<Outcome> classified = classifier.apply(e);
                if (classified.isEmpty()) {
                    run.record(state, trial, new Outcome.Retry(null, e, null));
                    step(run, steps, state, "error", e.getClass().getName(), null);
                    throw e;
                }
                o = classified.get();
            }
            if (o instanceof Outcome.QuotaExhausted q) {
                Instant reset = q.resetAt() != null ? q.resetAt() : clock.instant().plus(quotaSitOut);
                o = new Outcome.QuotaExhausted(reset, scrub(q.reason()));
            }
            Instant cooldown = run.record(state, trial, o);
            if (o instanceof Outcome.Done) {
                step(run, steps, state, "answered", null, null);
                return new Result<>(value, key.name(), state, steps);
            }
            if (o instanceof Outcome.RateLimited rl) {
                Duration d = EndpointSteps.max(rl.retryAfter(),
                        cooldown == null ? null : EndpointSteps.until(clock, cooldown));
                step(run, steps, state, "rate_limited", rl.reason(), d);
                passedOver = true;
                soonest = EndpointSteps.min(soonest, d);
                continue;
            }
            if (o instanceof Outcome.QuotaExhausted q) {
                Instant back = cooldown != null && cooldown.isAfter(q.resetAt()) ? cooldown : q.resetAt();
                Duration d = EndpointSteps.until(clock, back);
                step(run, steps, state, "quota_exhausted", q.reason() + " (sits out until " + back + ")", d);
                passedOver = true;
                soonest = EndpointSteps.min(soonest, d);
                continue;
            }
            if (o instanceof Outcome.AuthRefused ar) {
                step(run, steps, state, "auth_refused", ar.reason(), null);
                authRefused++;
                lastAuth = new Outcome.AuthRefused(scrub("API key " + key.name() + " of pool " + name + ": " + ar.reason()));
                continue;
            }
            step(run, steps, state, EndpointSteps.kind(o), EndpointSteps.reason(o), null);
            throw scrubbed(o).toException();
        }
        if (!passedOver && called > 0 && authRefused == called) {
            throw lastAuth.toException();
        }
        String summary = EndpointSteps.summary("no API key of pool " + name + " could be used:", steps);
        throw new Outcome.RateLimited(soonest, summary).toException();
    }

    private void step(ProviderCalls run, List<FallbackStep> steps, String key, String result, String detail, Duration wait) {
        FallbackStep s = new FallbackStep(key, result, scrub(detail), wait, run.clock().instant());
        steps.add(s);
        run.trail(s);
    }

    /** {@code text} with every secret of the pool replaced by {@code ***}. */
    String scrub(String text) {
        if (text == null) {
            return null;
        }
        String out = text;
        for (Key k : keys) {
            if (out.contains(k.secret())) {
                out = out.replace(k.secret(), MASK);
            }
        }
        return out;
    }

    /** An outcome passed on, its texts (and its cause's message) scrubbed of secrets. */
    private Outcome scrubbed(Outcome o) {
        if (o instanceof Outcome.Overloaded ov) {
            return new Outcome.Overloaded(ov.retryAfter(), scrub(ov.reason()));
        } else if (o instanceof Outcome.Transient t) {
            return new Outcome.Transient(scrub(t.reason()), scrub(t.cause()));
        } else if (o instanceof Outcome.Rejected r) {
            return new Outcome.Rejected(scrub(r.reason()));
        } else if (o instanceof Outcome.Retry r) {
            return new Outcome.Retry(scrub(r.reason()), scrub(r.cause()), r.minDelay());
        }
        return o;
    }

    private Throwable scrub(Throwable t) {
        if (t == null) {
            return null;
        }
        String m;
        try {
            m = t.getMessage();
        } catch (RuntimeException e) {
            return t;
        }
        String s = scrub(m);
        if (m == null || m.equals(s)) {
            return t;
        }
        return new ScrubbedException(t.getClass().getName() + ": " + s);
    }

    /** An exception whose message held an API key: the same message, without it. */
    static final class ScrubbedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ScrubbedException(String message) {
            super(message, null, false, false);
        }
    }








    /** Builds an {@link ApiKeyPool}. */
    public static final class Builder {
        private final String name;
        private final List<Key> keys = new ArrayList<>();
        private Function<Throwable, Optional<Outcome>> classifier = ProviderClassifier.defaults()::outcomeOf;
        private Duration quotaSitOut = Duration.ofHours(1);

        private Builder(String name) {
            if (name == null || name.isBlank() || name.length() > 100 || name.contains("#")) {
                throw new IllegalArgumentException("a pool name must be 1-100 characters without '#', was: " + name);
            }
            this.name = name;
        }

        /**
         * Adds a key.
         *
         * @param keyName its name, unique in the pool: letters, digits, {@code . _ : @ -}, at most 100
         * @param secret the API key itself
         * @return this builder
         */
        public Builder key(String keyName, String secret) {
            Key k = new Key(keyName, secret);
            for (Key e : keys) {
                if (e.name().equals(keyName)) {
                    throw new IllegalArgumentException("API key " + keyName + " is in pool " + name + " twice");
                }
            }
            keys.add(k);
            return this;
        }

        /**
         * @param classifier turns a call's exception into an outcome; empty means the job's own
         *     error. Default {@code ProviderClassifier.defaults()::outcomeOf}
         * @return this builder
         */
        public Builder classifier(Function<Throwable, Optional<Outcome>> classifier) {
            this.classifier = Objects.requireNonNull(classifier, "classifier");
            return this;
        }

        /**
         * How long a key whose quota ran out sits out when the provider named no reset (an
         * exhausted budget, a per-day limit without a reset header); after it one call tries the
         * key again.
         *
         * @param d positive; default 1 h
         * @return this builder
         */
        public Builder quotaSitOut(Duration d) {
            Objects.requireNonNull(d, "d");
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException("quotaSitOut must be positive, was " + d);
            }
            this.quotaSitOut = d;
            return this;
        }

        /** @return the pool */
        public ApiKeyPool build() {
            if (keys.isEmpty()) {
                throw new IllegalStateException("an API key pool needs at least one key");
            }
            return new ApiKeyPool(this);
        }
    }
}
