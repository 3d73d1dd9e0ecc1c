package dev.layover.core;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.batch.Batching;
import dev.layover.core.tokens.TokenEstimate;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * A kind of job: a name, an args type, a handler and its limits.
 *
 * <pre>{@code
 * JobType<Translate> translate = JobType.builder("translate", Translate.class)
 *         .handler((args, ctx) -> { client.translate(args); return Outcome.done(); })
 *         .policy(JobPolicy.defaults().withMaxAttempts(5))
 *         .providerKey(args -> "openai:" + args.model())
 *         .build();
 * }</pre>
 *
 * <p>The name is stored with every job ({@code job_type} in {@code layover.jobs}); keep it stable
 * across deployments. Names starting with {@code layover-} are reserved for Layover's own tasks. Arguments are stored as JSON written by Jackson; the args type is a record or
 * a POJO Jackson can write and read back, checked when the type is registered.
 *
 * @param <A> the args type
 */
public final class JobType<A> {

    /** The default cap of a step's stored result: 256 KiB of JSON. */
    public static final int DEFAULT_MAX_STEP_RESULT_BYTES = 256 * 1024;

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:\\-]{0,99}");

    private final String name;
    private final Class<A> argsType;
    private final JobHandler<A> handler;
    private final JobPolicy policy;
    private final Function<? super A, String> providerKey;
    private final String fixedProviderKey;
    private final Function<? super A, ? extends Collection<String>> limitKeys;
    private final Function<? super A, String> fairnessKey;
    private final ObjectMapper objectMapper;
    private final Function<? super A, TokenEstimate> tokenEstimate;
    private final Batching<A> batching;
    private final int maxStepResultBytes;

    private JobType(Builder<A> b) {
        this.name = b.name;
        this.argsType = b.argsType;
        this.handler = Objects.requireNonNull(b.handler, () -> "job type '" + b.name + "' has no handler");
        this.policy = b.policy;
        this.providerKey = b.providerKey;
        this.fixedProviderKey = b.fixedProviderKey;
        this.limitKeys = b.limitKeys;
        this.fairnessKey = b.fairnessKey;
        this.objectMapper = b.objectMapper;
        this.tokenEstimate = b.tokenEstimate;
        this.batching = b.batching;
        this.maxStepResultBytes = b.maxStepResultBytes;
        if (batching != null && providerKey == null) {
            throw new ConfigurationException("job type '" + name + "' is batchable but has no provider key: batches "
                    + "are per provider key (Builder#providerKey)");
        }
    }

    /**
     * A job type with default limits and no provider key.
     *
     * @param name a stable name: letters, digits, {@code . _ : -}, at most 100 characters
     * @param argsType the args class
     * @param handler the code
     * @param <A> the args type
     * @return the job type
     */
    public static <A> JobType<A> of(String name, Class<A> argsType, JobHandler<A> handler) {
        return builder(name, argsType).handler(handler).build();
    }

    /**
     * @param name a stable name: letters, digits, {@code . _ : -}, at most 100 characters
     * @param argsType the args class
     * @param <A> the args type
     * @return a builder
     */
    public static <A> Builder<A> builder(String name, Class<A> argsType) {
        return new Builder<>(name, argsType);
    }

    /** @return the name */
    public String name() {
        return name;
    }

    /** @return the args class */
    public Class<A> argsType() {
        return argsType;
    }

    /** @return the handler */
    public JobHandler<A> handler() {
        return handler;
    }

    /** @return the limits */
    public JobPolicy policy() {
        return policy;
    }

    /**
     * The provider key of a job with these args, computed once at enqueue and stored with the job.
     *
     * @param args the args
     * @return the key, or {@code null} when the job type has none
     */
    public String providerKeyOf(A args) {
        return providerKey == null ? null : providerKey.apply(args);
    }

    /**
     * The limit keys of a job with these args (see {@link Builder#limitKeys(Function)}): distinct,
     * in the order given, without nulls and without the provider key.
     *
     * @param args the args
     * @return the keys, possibly empty; never {@code null}
     */
    public List<String> limitKeysOf(A args) {
        if (limitKeys == null) {
            return List.of();
        }
        Collection<String> keys = limitKeys.apply(args);
        if (keys == null || keys.isEmpty()) {
            return List.of();
        }
        String own = providerKeyOf(args);
        LinkedHashSet<String> out = new LinkedHashSet<>();
        for (String k : keys) {
            if (k != null && !k.equals(own)) {
                out.add(k);
            }
        }
        return List.copyOf(out);
    }

    /**
     * The fairness key of a job with these args ({@link Builder#fairnessKey}), computed once at
     * enqueue and stored with the job.
     *
     * @param args the args
     * @return the key, or {@code null} when the job type has none (or the function returned none)
     */
    public String fairnessKeyOf(A args) {
        return fairnessKey == null ? null : fairnessKey.apply(args);
    }

    /** @return whether the job type derives limit keys from its args */
    public boolean hasLimitKeys() {
        return limitKeys != null;
    }

    /**
     * @return the provider key every job of this type has ({@link Builder#providerKey(String)}), or
     *     {@code null} when the type has none or derives it from each job's args
     */
    public String fixedProviderKey() {
        return fixedProviderKey;
    }

    /**
     * @return whether the provider key is a function of the args ({@link Builder#providerKey(Function)}):
     *     an enqueue from SQL must then pass it ({@code docs/enqueue-from-sql.md})
     */
    public boolean providerKeyFromArgs() {
        return providerKey != null && fixedProviderKey == null;
    }

    /** @return whether the job type derives a fairness key from its args ({@link Builder#fairnessKey}) */
    public boolean hasFairnessKey() {
        return fairnessKey != null;
    }

    /**
     * @return the job type's token estimate ({@link Builder#tokenEstimate}), or {@code null} when
     *     it has none
     */
    public Function<? super A, TokenEstimate> tokenEstimate() {
        return tokenEstimate;
    }

    /**
     * @return how the job type's deferrable jobs go by batch ({@link Builder#batchable}), or
     *     {@code null} when they never do
     */
    public Batching<A> batching() {
        return batching;
    }

    /**
     * @return the largest step result this type's jobs store, as JSON bytes
     *     ({@link Builder#maxStepResultBytes(int)})
     */
    public int maxStepResultBytes() {
        return maxStepResultBytes;
    }

    /** @return the job type's own Jackson mapper, or {@code null} to use Layover's */
    public ObjectMapper objectMapper() {
        return objectMapper;
    }

    @Override
    public String toString() {
        return "JobType[" + name + ", " + argsType.getName() + "]";
    }

    /**
     * Builds a {@link JobType}.
     *
     * @param <A> the args type
     */
    public static final class Builder<A> {
        private final String name;
        private final Class<A> argsType;
        private JobHandler<A> handler;
        private JobPolicy policy = JobPolicy.defaults();
        private Function<? super A, String> providerKey;
        private String fixedProviderKey;
        private Function<? super A, ? extends Collection<String>> limitKeys;
        private Function<? super A, String> fairnessKey;
        private ObjectMapper objectMapper;
        private Function<? super A, TokenEstimate> tokenEstimate;
        private Batching<A> batching;
        private int maxStepResultBytes = DEFAULT_MAX_STEP_RESULT_BYTES;

        private Builder(String name, Class<A> argsType) {
            if (name == null || !NAME.matcher(name).matches()) {
                throw new ConfigurationException("job type name must be 1-100 characters of letters, digits and . _ : - "
                        + "starting with a letter or digit, was: " + name);
            }
            if (name.startsWith("layover-")) {
                throw new ConfigurationException("job type names starting with 'layover-' are reserved for Layover's own "
                        + "tasks, was: " + name);
            }
            this.name = name;
            this.argsType = Objects.requireNonNull(argsType, "argsType");
        }

        /**
         * @param handler the code of the job type
         * @return this builder
         */
        public Builder<A> handler(JobHandler<A> handler) {
            this.handler = Objects.requireNonNull(handler, "handler");
            return this;
        }

        /**
         * @param policy the limits; default {@link JobPolicy#defaults()}
         * @return this builder
         */
        public Builder<A> policy(JobPolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * A fixed provider key for every job of this type, e.g. {@code "openai:gpt-4o-mini"}.
         *
         * @param key the key
         * @return this builder
         */
        public Builder<A> providerKey(String key) {
            Objects.requireNonNull(key, "key");
            this.providerKey = a -> key;
            this.fixedProviderKey = key;
            return this;
        }

        /**
         * A provider key derived from each job's args, computed once at enqueue.
         *
         * @param key a function of the args; may return {@code null}
         * @return this builder
         */
        public Builder<A> providerKey(Function<? super A, String> key) {
            this.providerKey = Objects.requireNonNull(key, "key");
            this.fixedProviderKey = null;
            return this;
        }

        /**
         * Keys whose limits and pauses each job is subject to besides its provider key, derived
         * from the job's args: for a tenant budget, {@code args -> List.of("tenant:" + args.tenantId())}.
         * A job runs only when every one of its keys admits it (concurrency limits and buckets
         * configured with {@code Layover.Builder#concurrencyLimit} and {@code #bucket}, exact or
         * with a {@code prefix*} pattern), all or nothing. Pausing one of its keys pauses it.
         *
         * <p>The keys must come from the args as the application enqueued them (never from
         * anything else the handler's JVM knows, such as a thread-local tenant): they are computed
         * once at enqueue and stored in {@code limit_keys} for SQL and pauses, and computed again
         * from the same args by the worker that runs the job.
         *
         * @param keys a function of the args; may return {@code null} or an empty collection
         * @return this builder
         */
        public Builder<A> limitKeys(Function<? super A, ? extends Collection<String>> keys) {
            this.limitKeys = Objects.requireNonNull(keys, "keys");
            return this;
        }

        /**
         * The job's fairness key within its provider key's limit, derived from its args, e.g.
         * {@code args -> "tenant:" + args.tenantId()}: the key's permits go to its fairness keys
         * with waiting jobs in proportion to their weights (default 1 each;
         * {@code Layover.Builder#fairnessWeight}), work-conserving, so that one tenant's backlog
         * never holds the others back ({@code docs/fairness.md}). Stored in
         * {@code scheduled_tasks.fairness_key} at enqueue (1-200 characters; {@code null}: none).
         *
         * <p>Database effect: a job enqueued due gets a virtual-time tag in the same {@code INSERT}
         * ({@code scheduled_tasks.fair_tag}, from {@code layover.fair_tags}), and the pick admits the
         * key's tagged jobs lowest tag first, under every limit of the key (bucket, tokens,
         * concurrency). No attempt spent, no reschedule counted. A job moved to a later run time
         * (a rate-limit reschedule, a retry, a pause) loses its tag and, once due, goes with the
         * key's untagged jobs, which the pick admits first. A job type without a fairness key
         * behaves exactly as before.
         *
         * @param key a function of the args; may return {@code null}
         * @return this builder
         */
        public Builder<A> fairnessKey(Function<? super A, String> key) {
            this.fairnessKey = Objects.requireNonNull(key, "key");
            return this;
        }

        /**
         * A Jackson mapper of this type's own, for args that need modules or settings of their own.
         * Default: Layover's mapper (Java time and Optional support). Whatever the mapper, stored args
         * are read ignoring a property the args type does not know as long as every property it
         * declares is there (a field added by a newer version: a rolling deploy just works), and
         * refusing one that comes with a declared one missing (a rename: the data would be lost);
         * args a worker cannot read wait for a worker of the version that wrote them
         * ({@link JobPolicy#newerArgsWait()}) or are parked {@code bad_args}.
         *
         * @param mapper the mapper
         * @return this builder
         */
        public Builder<A> objectMapper(ObjectMapper mapper) {
            this.objectMapper = Objects.requireNonNull(mapper, "mapper");
            return this;
        }

        /**
         * What each call of a job reserves in its key's bucket, from its args, in one line:
         * {@code .tokenEstimate(a -> TokenEstimate.of(counter.count(a.prompt()), a.maxTokens()))}
         * (input estimate: {@code TokenEstimator} or {@code CalibratedEstimator}; output ceiling: the
         * request's {@code max_tokens}). When the key's bucket limits tokens, the reservation is
         * taken with the request permit, in every token dimension at once or not at all; a handler
         * may refine it before its call ({@link JobContext#refineEstimate}) and reports the call's
         * usage after it ({@link JobContext#reportUsage(Object)}), which replaces the reservation.
         * An estimate larger than a dimension's capacity parks the job {@code rejected} at once.
         * A function that throws (a negative count makes {@code TokenEstimate.of} throw) or returns
         * {@code null}: the job runs reserving nothing, its reported usage is charged after the call,
         * and a warning names the job. Default: none (jobs reserve no tokens; their reported usage
         * is still charged). See {@code docs/tokens.md}.
         *
         * @param estimate a function of the args
         * @return this builder
         */
        public Builder<A> tokenEstimate(Function<? super A, TokenEstimate> estimate) {
            this.tokenEstimate = Objects.requireNonNull(estimate, "estimate");
            return this;
        }

        /**
         * Lets the type's deferrable jobs go to their provider key's batch tier (half price):
         * a job whose deadline (or enqueue plus the batching's tolerance) leaves room for the key's
         * expected batch completion is gathered into a batch instead of being called; the rest are
         * called by the handler as before. Takes effect only for provider keys with batching
         * ({@code Layover.Builder#batching}); needs a {@link #providerKey}. Database effect of a
         * gathered job: a {@code layover.batch_items} row, and its row waits (reason
         * {@code batched}) without an attempt or a counted reschedule until its line comes back.
         * Default: none. See {@code docs/batches.md} and {@link Batching}.
         *
         * @param batching the request and result functions
         * @return this builder
         */
        public Builder<A> batchable(Batching<A> batching) {
            this.batching = Objects.requireNonNull(batching, "batching");
            return this;
        }

        /**
         * The largest result a step of this type's jobs stores ({@link JobContext#step}), as JSON
         * bytes. A larger result is not stored: the step throws a {@link StepException} and the job
         * parks {@code handler_parked} at once (no attempt spent; raise the cap and replay it: its
         * other finished steps are reused). Default {@value JobType#DEFAULT_MAX_STEP_RESULT_BYTES}
         * (256 KiB).
         *
         * @param bytes the cap, at least 1
         * @return this builder
         */
        public Builder<A> maxStepResultBytes(int bytes) {
            if (bytes < 1) {
                throw new IllegalArgumentException("maxStepResultBytes is at least 1, was " + bytes);
            }
            this.maxStepResultBytes = bytes;
            return this;
        }

        /** @return the job type */
        public JobType<A> build() {
            return new JobType<>(this);
        }
    }
}
