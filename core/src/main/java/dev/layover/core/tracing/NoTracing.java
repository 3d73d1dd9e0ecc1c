package dev.layover.core.tracing;

/** Records nothing ({@link LayoverTracing#none()}). */
final class NoTracing implements LayoverTracing {

    static final NoTracing INSTANCE = new NoTracing();

    private NoTracing() {}

    @Override
    public String toString() {
        return "LayoverTracing.none()";
    }
}
