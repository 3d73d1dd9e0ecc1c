package dev.layover.core;

/**
 * What {@link JobContext#awaitSignal} gives back on the run after the wait ended: the signal's
 * payload, or that it timed out.
 *
 * @param name the signal's name
 * @param received true when the signal arrived ({@link Layover#signal} or {@code layover.signal});
 *     false when the wait timed out
 * @param payloadJson the payload as JSON ({@code null} as JSON when sent without one); null when it
 *     timed out
 */
public record Signal(String name, boolean received, String payloadJson) {

    /** @return true when the wait ended without the signal */
    public boolean timedOut() {
        return !received;
    }

    /**
     * @param type the class to read the payload as (Layover's default Jackson mapper)
     * @param <T> the payload type
     * @return the payload, or null when it timed out or was sent without one
     * @throws InvalidArgsException when the payload does not read as {@code type}
     */
    public <T> T payload(Class<T> type) {
        return StoredJson.read(payloadJson, type, "the payload of signal '" + name + "'");
    }
}
