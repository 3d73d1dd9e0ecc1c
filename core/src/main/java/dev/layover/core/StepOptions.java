package dev.layover.core;

import dev.layover.core.tokens.TokenEstimate;
import java.time.Duration;
import java.util.Objects;

/**
 * How one step of a job runs ({@link JobContext#step(StepOptions, Class, StepCall)}): its name, the
 * provider key it is admitted by, its token estimate and how long its result stays valid.
 * Immutable.
 *
 * <table>
 *   <caption>Settings and defaults</caption>
 *   <tr><th>setting</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>{@link #named(String) name}</td><td>required</td><td>unique within the job: the key its
 *       result is stored under ({@code layover.job_steps.name}); 1 to {@value #MAX_NAME_LENGTH}
 *       characters</td></tr>
 *   <tr><td>{@link #providerKey(String)}</td><td>none</td><td>the step is admitted by this key when
 *       it starts (breaker, cooldown, bucket, tokens, as a fallback endpoint's call is): a key that
 *       says "not now" makes the whole job wait (rescheduled, no attempt spent) and resume at this
 *       step; the step's outcome teaches the key (cooldown, breaker). Without one the step is part
 *       of the job's own call, admitted by the job's pick, as a handler's calls are</td></tr>
 *   <tr><td>{@link #tokens(TokenEstimate)}</td><td>none</td><td>what the step's admission reserves
 *       of its key's token limits; settled by the usage reported inside the step</td></tr>
 *   <tr><td>{@link #validFor(Duration)}</td><td>forever</td><td>a stored result older than this is
 *       not reused: the step runs again (a price quote valid for 10 minutes)</td></tr>
 * </table>
 */
public final class StepOptions {

    /** The longest step name. */
    public static final int MAX_NAME_LENGTH = 200;

    private final String name;
    private final String providerKey;
    private final TokenEstimate tokens;
    private final Duration validFor;

    private StepOptions(String name, String providerKey, TokenEstimate tokens, Duration validFor) {
        this.name = name;
        this.providerKey = providerKey;
        this.tokens = tokens;
        this.validFor = validFor;
    }

    /**
     * @param name the step's name, unique within its job (e.g. {@code segment-7})
     * @return options with that name and every other setting at its default
     * @throws IllegalArgumentException for a blank name or one longer than {@value #MAX_NAME_LENGTH}
     */
    public static StepOptions named(String name) {
        Objects.requireNonNull(name, "step name");
        if (name.isBlank() || name.length() > MAX_NAME_LENGTH) {
            throw new IllegalArgumentException("a step name is 1 to " + MAX_NAME_LENGTH + " characters, not blank: '"
                    + (name.length() > 40 ? name.substring(0, 40) + "..." : name) + "'");
        }
        return new StepOptions(name, null, null, null);
    }

    /**
     * @param key the provider key the step is admitted by when it starts (e.g. {@code openai:gpt-4o-mini})
     * @return a copy with it
     */
    public StepOptions providerKey(String key) {
        Objects.requireNonNull(key, "providerKey");
        if (key.isBlank()) {
            throw new IllegalArgumentException("a step's provider key is not blank");
        }
        return new StepOptions(name, key, tokens, validFor);
    }

    /**
     * @param estimate what the step's admission reserves of its key's token limits
     * @return a copy with it
     */
    public StepOptions tokens(TokenEstimate estimate) {
        return new StepOptions(name, providerKey, Objects.requireNonNull(estimate, "tokens"), validFor);
    }

    /**
     * @param d how long a stored result is reused (database time, from the step's finish); positive
     * @return a copy with it
     */
    public StepOptions validFor(Duration d) {
        Objects.requireNonNull(d, "validFor");
        if (d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException("a step's validFor is positive, was " + d);
        }
        return new StepOptions(name, providerKey, tokens, d);
    }

    /** @return the step's name */
    public String name() {
        return name;
    }

    /** @return the key it is admitted by, or {@code null}: the job's own call */
    public String providerKey() {
        return providerKey;
    }

    /** @return its token estimate, or {@code null} */
    public TokenEstimate tokens() {
        return tokens;
    }

    /** @return how long its result is reused, or {@code null}: forever */
    public Duration validFor() {
        return validFor;
    }

    @Override
    public String toString() {
        return "step '" + name + "'" + (providerKey == null ? "" : " (" + providerKey + ")");
    }
}
