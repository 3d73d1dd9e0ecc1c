package dev.layover.core.internal.jobs;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.ObjectWriter;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.exc.InvalidDefinitionException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.ser.impl.UnknownSerializer;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import dev.layover.core.ConfigurationException;
import dev.layover.core.InvalidArgsException;
import dev.layover.core.JobType;
import java.io.IOException;

/**
 * Reads and writes one job type's args as JSON, within the size cap.
 *
 * @param <A> the args type
 */
public final class ArgsCodec<A> {

    private static final String TOO_DEEP = "nesting depth exceeds what this JVM's stack can hold (StackOverflowError); "
            + "keep args shallow or restore Jackson's default nesting limit (1000)";

    private final String jobType;
    private final Class<A> type;
    /**
     * Reads stored args: a property this version does not know (added by a newer one) is ignored,
     * as long as every property this version declares is there; unknown and missing properties
     * together look like a rename and do not read (the data would be lost).
     */
    private final ObjectReader reader;
    private final ObjectReader treeReader;
    private final java.util.Set<String> declared;
    /** Reads args a person edited: an unknown property is a typo, refused. */
    private final ObjectReader strictReader;
    private final ObjectWriter writer;
    private final int maxBytes;
    private final String shape;

    private ArgsCodec(String jobType, Class<A> type, ObjectMapper mapper, int maxBytes) {
        this.jobType = jobType;
        this.type = type;
        this.reader = mapper.readerFor(type).without(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .withHandler(UnknownProperties.HANDLER);
        this.treeReader = mapper.reader();
        this.declared = ArgsShape.properties(mapper, type);
        this.strictReader = mapper.readerFor(type).with(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
        this.writer = mapper.writerFor(type);
        this.maxBytes = maxBytes;
        this.shape = ArgsShape.of(mapper, type);
    }

    /**
     * Layover's default mapper: Java time and Optional support, ISO dates. Stored args are read
     * ignoring properties the args type does not have, whatever the mapper says, so that a field
     * added by a newer version of a job type is no obstacle to a worker still on the older one (a
     * rolling deploy); args edited by a person are read refusing them (a typo must not vanish).
     *
     * @return a new mapper
     */
    public static ObjectMapper defaultMapper() {
        return JsonMapper.builder()
                .addModule(new JavaTimeModule())
                .addModule(new Jdk8Module())
                .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
                .build();
    }

    /**
     * @return the fingerprint of the args type's JSON shape (its properties and their types), written
     *     with each job: a worker that cannot read a job's args tells from it whether another version
     *     of the job type wrote them
     */
    public String shape() {
        return shape;
    }

    /**
     * A codec for a job type, after checking Jackson can write and read its args type.
     *
     * @param jobType the job type
     * @param fallback the mapper to use when the job type has none of its own
     * @param maxBytes the size cap of serialized args
     * @param <A> the args type
     * @return the codec
     * @throws ConfigurationException when the args type does not round-trip through Jackson
     */
    public static <A> ArgsCodec<A> forType(JobType<A> jobType, ObjectMapper fallback, int maxBytes) {
        ObjectMapper mapper = jobType.objectMapper() != null ? jobType.objectMapper() : fallback;
        Class<A> type = jobType.argsType();
        String where = "job type '" + jobType.name() + "': args type " + type.getName();
        try {
            var serializer = mapper.getSerializerProviderInstance().findValueSerializer(type);
            boolean emptyRecord = type.isRecord() && type.getRecordComponents().length == 0;
            if (serializer instanceof UnknownSerializer && !emptyRecord) {
                throw new ConfigurationException(where + " has no properties Jackson can write "
                        + "(give it public getters or fields, or make it a record)");
            }
        } catch (JsonMappingException e) {
            throw new ConfigurationException(where + " cannot be written as JSON: " + e.getOriginalMessage(), e);
        }
        try {
            mapper.readerFor(type).readValue("{}");
        } catch (InvalidDefinitionException e) {
            throw new ConfigurationException(where + " cannot be read back from JSON: " + e.getOriginalMessage()
                    + " (records and classes with a no-argument or @JsonCreator constructor work)", e);
        } catch (IOException e) {
            // "{}" is not a valid value of this type (e.g. a required property): the type itself is readable
        }
        return new ArgsCodec<>(jobType.name(), type, mapper, maxBytes);
    }

    /**
     * @param args the args
     * @return the JSON bytes
     * @throws InvalidArgsException when args are null, cannot be written, or exceed the cap
     */
    public byte[] write(Object args) {
        if (args == null) {
            throw new InvalidArgsException("job type '" + jobType + "': args must not be null");
        }
        if (!type.isInstance(args)) {
            throw new InvalidArgsException("job type '" + jobType + "': args must be a " + type.getName()
                    + ", got " + args.getClass().getName());
        }
        byte[] json;
        try {
            json = writer.writeValueAsBytes(args);
        } catch (JsonProcessingException e) {
            String why = e.getCause() instanceof StackOverflowError
                    ? "a reference cycle, or " + TOO_DEEP
                    : e.getOriginalMessage();
            throw new InvalidArgsException("job type '" + jobType + "': Jackson cannot write these args: " + why, e);
        } catch (StackOverflowError e) {
            // a mapper without Jackson's nesting limit, and args nested deeper than the stack
            throw new InvalidArgsException("job type '" + jobType + "': Jackson cannot write these args: "
                    + TOO_DEEP);
        }
        if (json.length > maxBytes) {
            throw new InvalidArgsException("job type '" + jobType + "': args are " + json.length
                    + " bytes as JSON, over the cap of " + maxBytes + " bytes; store large payloads elsewhere "
                    + "and pass a reference");
        }
        return json;
    }

    /**
     * @param json the stored bytes
     * @return the args
     * @throws IOException when the bytes do not read as the args type
     */
    public A read(byte[] json) throws IOException {
        if (json == null) {
            throw new IOException("the job has no stored args");
        }
        UnknownProperties.SEEN.set(null);
        A value;
        try {
            value = reader.readValue(json);
        } finally {
            String unknown = UnknownProperties.SEEN.get();
            UnknownProperties.SEEN.remove();
            if (unknown != null) {
                checkNothingMissing(json, unknown);
            }
        }
        return value;
    }

    /** Unknown properties came with the args: fine when every declared one is there too (a field was added). */
    private void checkNothingMissing(byte[] json, String unknown) throws IOException {
        com.fasterxml.jackson.databind.JsonNode tree = treeReader.readTree(json);
        for (String p : declared) {
            if (!tree.has(p)) {
                throw new IOException("the stored args have property '" + unknown + "', which " + type.getSimpleName()
                        + " does not know, and lack '" + p + "', which it declares (a renamed field?)");
            }
        }
    }

    /**
     * Validates edited args: they must read as the args type and write back within the cap.
     *
     * @param json the proposed args as JSON text
     * @return the normalized JSON bytes (as Jackson writes the value read)
     * @throws InvalidArgsException with Jackson's explanation when they do not
     */
    public byte[] validate(String json) {
        A value;
        try {
            value = strictReader.readValue(json);
        } catch (IOException e) {
            String m = e instanceof JsonProcessingException jp ? jp.getOriginalMessage() : e.getMessage();
            throw new InvalidArgsException("job type '" + jobType + "': args do not read as " + type.getSimpleName()
                    + ": " + m, e);
        } catch (StackOverflowError e) {
            throw new InvalidArgsException("job type '" + jobType + "': args do not read as " + type.getSimpleName()
                    + ": " + TOO_DEEP);
        }
        return write(value);
    }

    /** @return the properties the args type declares (what Jackson reads into it), sorted */
    public java.util.SortedSet<String> properties() {
        return java.util.Collections.unmodifiableSortedSet(new java.util.TreeSet<>(declared));
    }

    /** @return the size cap in bytes */
    public int maxBytes() {
        return maxBytes;
    }
}
