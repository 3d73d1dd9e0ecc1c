package dev.layover.dlq;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.layover.core.outcome.FailureType;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;

/**
 * Which dead letters: by job type, provider key, failure type, state, park time and text in the
 * error. Conditions combine with AND; the values of one condition with OR. Every value is bound as
 * a query parameter, never written into SQL text.
 *
 * <pre>{@code
 * DeadLetterFilter f = DeadLetterFilter.all()
 *         .withStates(DeadLetterState.PARKED)
 *         .withProviderKeys("openai:gpt-4o-mini")
 *         .withText("timeout");
 * }</pre>
 *
 * <p>Immutable: every {@code with..} returns a new filter; an empty list means "any".
 */
public final class DeadLetterFilter {

    /** Longest text accepted by {@link #withText(String)}. */
    public static final int MAX_TEXT = 200;

    private static final DeadLetterFilter ALL = new DeadLetterFilter(List.of(), List.of(), List.of(), List.of(),
            null, null, null);

    private final List<String> jobTypes;
    private final List<String> providerKeys;
    private final List<String> failureTypes;
    private final List<DeadLetterState> states;
    private final Instant parkedFrom;
    private final Instant parkedUntil;
    private final String text;

    private DeadLetterFilter(List<String> jobTypes, List<String> providerKeys, List<String> failureTypes,
            List<DeadLetterState> states, Instant parkedFrom, Instant parkedUntil, String text) {
        this.jobTypes = jobTypes;
        this.providerKeys = providerKeys;
        this.failureTypes = failureTypes;
        this.states = states;
        this.parkedFrom = parkedFrom;
        this.parkedUntil = parkedUntil;
        this.text = text;
    }

    /** @return the filter that matches every dead letter */
    public static DeadLetterFilter all() {
        return ALL;
    }

    /**
     * @param names job type names; none means any
     * @return a filter with this condition replaced
     */
    public DeadLetterFilter withJobTypes(String... names) {
        return new DeadLetterFilter(values(names, "job type"), providerKeys, failureTypes, states, parkedFrom,
                parkedUntil, text);
    }

    /**
     * @param keys provider keys, e.g. {@code "openai:gpt-4o-mini"}; none means any
     * @return a filter with this condition replaced
     */
    public DeadLetterFilter withProviderKeys(String... keys) {
        return new DeadLetterFilter(jobTypes, values(keys, "provider key"), failureTypes, states, parkedFrom,
                parkedUntil, text);
    }

    /**
     * @param codes stored failure types, e.g. {@code "provider_unavailable"}; none means any
     * @return a filter with this condition replaced
     */
    public DeadLetterFilter withFailureTypes(String... codes) {
        return new DeadLetterFilter(jobTypes, providerKeys, values(codes, "failure type"), states, parkedFrom,
                parkedUntil, text);
    }

    /**
     * @param types failure types; none means any
     * @return a filter with this condition replaced
     */
    public DeadLetterFilter withFailureTypes(FailureType... types) {
        return withFailureTypes(Arrays.stream(types).map(t -> Objects.requireNonNull(t, "failure type").code())
                .toArray(String[]::new));
    }

    /**
     * @param states states; none means any
     * @return a filter with this condition replaced
     */
    public DeadLetterFilter withStates(DeadLetterState... states) {
        for (DeadLetterState s : states) {
            Objects.requireNonNull(s, "state");
        }
        return new DeadLetterFilter(jobTypes, providerKeys, failureTypes, List.copyOf(new LinkedHashSet<>(
                Arrays.asList(states))), parkedFrom, parkedUntil, text);
    }

    /**
     * Parked in {@code [from, until)}: {@code parked_at >= from AND parked_at < until}. A
     * re-parked dead letter counts by its latest park.
     *
     * @param from the first instant included, or {@code null} for no lower bound
     * @param until the first instant excluded, or {@code null} for no upper bound
     * @return a filter with this condition replaced
     */
    public DeadLetterFilter withParkedBetween(Instant from, Instant until) {
        if (from != null && until != null && !from.isBefore(until)) {
            throw new IllegalArgumentException("parked between: 'from' (" + from + ") must be before 'until' ("
                    + until + ")");
        }
        return new DeadLetterFilter(jobTypes, providerKeys, failureTypes, states, from, until, text);
    }

    /**
     * Text in the error: a case-insensitive substring of the error class or the error message of
     * the last failure. Taken literally: {@code %}, {@code _} and {@code \} match themselves.
     *
     * @param text the text, at most {@value #MAX_TEXT} characters; {@code null} or blank for any
     * @return a filter with this condition replaced
     */
    public DeadLetterFilter withText(String text) {
        String t = text == null || text.isBlank() ? null : text;
        if (t != null && t.length() > MAX_TEXT) {
            throw new IllegalArgumentException("text filter is longer than " + MAX_TEXT + " characters");
        }
        return new DeadLetterFilter(jobTypes, providerKeys, failureTypes, states, parkedFrom, parkedUntil, t);
    }

    /** @return the job types (empty: any) */
    public List<String> jobTypes() {
        return jobTypes;
    }

    /** @return the provider keys (empty: any) */
    public List<String> providerKeys() {
        return providerKeys;
    }

    /** @return the failure type codes (empty: any) */
    public List<String> failureTypes() {
        return failureTypes;
    }

    /** @return the states (empty: any) */
    public List<DeadLetterState> states() {
        return states;
    }

    /** @return the first park time included, or {@code null} */
    public Instant parkedFrom() {
        return parkedFrom;
    }

    /** @return the first park time excluded, or {@code null} */
    public Instant parkedUntil() {
        return parkedUntil;
    }

    /** @return the text searched in the error, or {@code null} */
    public String text() {
        return text;
    }

    /** @return whether this filter matches every dead letter */
    public boolean isAll() {
        return equals(ALL);
    }

    /**
     * The filter as JSON, as the audit log stores it: only the conditions that are set, e.g.
     * {@code {"states":["parked"],"provider_keys":["openai:gpt-4o-mini"]}}.
     *
     * @return the JSON object
     */
    public ObjectNode toJson() {
        ObjectNode n = JsonNodeFactory.instance.objectNode();
        array(n, "job_types", jobTypes);
        array(n, "provider_keys", providerKeys);
        array(n, "failure_types", failureTypes);
        array(n, "states", states.stream().map(DeadLetterState::code).toList());
        if (parkedFrom != null) {
            n.put("parked_from", parkedFrom.toString());
        }
        if (parkedUntil != null) {
            n.put("parked_until", parkedUntil.toString());
        }
        if (text != null) {
            n.put("text", text);
        }
        return n;
    }

    private static void array(ObjectNode n, String name, List<String> values) {
        if (!values.isEmpty()) {
            ArrayNode a = n.putArray(name);
            values.forEach(a::add);
        }
    }

    private static List<String> values(String[] values, String what) {
        List<String> out = new ArrayList<>(new LinkedHashSet<>(Arrays.asList(values)));
        for (String v : out) {
            if (v == null || v.isEmpty() || v.length() > 200) {
                throw new IllegalArgumentException(what + " filter values must be 1-200 characters, got: " + v);
            }
        }
        return List.copyOf(out);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof DeadLetterFilter f)) {
            return false;
        }
        return jobTypes.equals(f.jobTypes) && providerKeys.equals(f.providerKeys) && failureTypes.equals(f.failureTypes)
                && states.equals(f.states) && Objects.equals(parkedFrom, f.parkedFrom)
                && Objects.equals(parkedUntil, f.parkedUntil) && Objects.equals(text, f.text);
    }

    @Override
    public int hashCode() {
        return Objects.hash(jobTypes, providerKeys, failureTypes, states, parkedFrom, parkedUntil, text);
    }

    @Override
    public String toString() {
        return "DeadLetterFilter" + toJson();
    }
}
