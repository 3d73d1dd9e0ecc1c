package dev.layover.core.internal.jobs;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.core.ConfigurationException;
import dev.layover.core.JobType;
import dev.layover.core.UnknownJobTypeException;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** The registered job types, each with its args codec. Built once, then read-only. */
public final class Registry {

    /**
     * A registered job type.
     *
     * @param type the job type
     * @param codec its args codec
     * @param <A> the args type
     */
    public record Entry<A>(JobType<A> type, ArgsCodec<A> codec) {}

    private final Map<String, Entry<?>> byName = new LinkedHashMap<>();

    /**
     * @param types the job types
     * @param mapper the default mapper
     * @param maxArgsBytes the args size cap
     * @throws ConfigurationException on a duplicate name or an args type Jackson cannot round-trip
     */
    public Registry(Collection<JobType<?>> types, ObjectMapper mapper, int maxArgsBytes) {
        for (JobType<?> t : types) {
            if (byName.containsKey(t.name())) {
                throw new ConfigurationException("job type '" + t.name() + "' is registered twice; names must be unique");
            }
            byName.put(t.name(), entry(t, mapper, maxArgsBytes));
        }
    }

    private static <A> Entry<A> entry(JobType<A> t, ObjectMapper mapper, int maxArgsBytes) {
        return new Entry<>(t, ArgsCodec.forType(t, mapper, maxArgsBytes));
    }

    /** @return every entry, in registration order */
    public Collection<Entry<?>> entries() {
        return Collections.unmodifiableCollection(byName.values());
    }

    /**
     * @return each job type as {@code layover.job_types} records it (what {@code layover.enqueue} needs
     *     to write a job of it as the Java enqueue does)
     */
    public java.util.List<JobStore.TypeRow> typeRows() {
        java.util.List<JobStore.TypeRow> rows = new java.util.ArrayList<>();
        for (Entry<?> e : byName.values()) {
            JobType<?> t = e.type();
            // a Map or a JsonNode reads any property: no list to check against
            boolean any = java.util.Map.class.isAssignableFrom(t.argsType())
                    || com.fasterxml.jackson.databind.JsonNode.class.isAssignableFrom(t.argsType());
            rows.add(new JobStore.TypeRow(t.name(), e.codec().shape(),
                    any ? null : e.codec().properties().toArray(String[]::new),
                    e.codec().maxBytes(), t.fixedProviderKey(), t.providerKeyFromArgs(), t.hasFairnessKey(),
                    t.hasLimitKeys()));
        }
        return rows;
    }

    /**
     * @param name a job type name
     * @return the entry, or {@code null}
     */
    public Entry<?> get(String name) {
        return byName.get(name);
    }

    /**
     * The entry of exactly this job type object.
     *
     * @param type the job type passed by a caller
     * @param <A> the args type
     * @return the entry
     * @throws UnknownJobTypeException when it was not registered
     */
    @SuppressWarnings("unchecked")
    public <A> Entry<A> require(JobType<A> type) {
        Entry<?> e = byName.get(type.name());
        if (e == null) {
            throw new UnknownJobTypeException(type.name(), "job type '" + type.name()
                    + "' is not registered with this Layover instance; add it with Layover.builder(..).register(..)");
        }
        if (e.type() != type) {
            throw new UnknownJobTypeException(type.name(), "another JobType object is registered under the name '"
                    + type.name() + "'; enqueue with the registered instance");
        }
        return (Entry<A>) e;
    }
}
