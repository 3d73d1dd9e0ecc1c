package dev.layover.core.internal.jobs;

import com.fasterxml.jackson.databind.BeanDescription;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.introspect.BeanPropertyDefinition;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The fingerprint of an args type's JSON shape: the names and declared types of the properties
 * Jackson reads, sorted, hashed. Two versions of a job type whose args read the same JSON the same
 * way have the same shape; adding, removing, renaming or retyping a property changes it.
 */
final class ArgsShape {

    private ArgsShape() {}

    /** @return the names of the properties Jackson reads into {@code type} */
    static java.util.Set<String> properties(ObjectMapper mapper, Class<?> type) {
        java.util.Set<String> names = new java.util.TreeSet<>();
        try {
            BeanDescription d = mapper.getDeserializationConfig().introspect(mapper.constructType(type));
            for (BeanPropertyDefinition p : d.findProperties()) {
                if (p.couldDeserialize()) {
                    names.add(p.getName());
                }
            }
        } catch (RuntimeException e) {
            return java.util.Set.of();
        }
        return java.util.Set.copyOf(names);
    }

    static String of(ObjectMapper mapper, Class<?> type) {
        List<String> parts = new ArrayList<>();
        try {
            JavaType t = mapper.constructType(type);
            BeanDescription d = mapper.getDeserializationConfig().introspect(t);
            for (BeanPropertyDefinition p : d.findProperties()) {
                JavaType pt = p.getPrimaryType();
                parts.add(p.getName() + ":" + (pt == null ? "?" : pt.toCanonical()));
            }
        } catch (RuntimeException e) {
            parts.add("type:" + type.getName());
        }
        parts.sort(null);
        try {
            byte[] h = MessageDigest.getInstance("SHA-256").digest(String.join(",", parts)
                    .getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(h, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
