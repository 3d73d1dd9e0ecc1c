package dev.layover.core.metrics;

/** {@link LayoverMetrics#none()}: every default, nothing recorded. */
final class NoMetrics implements LayoverMetrics {

    static final NoMetrics INSTANCE = new NoMetrics();

    private NoMetrics() {}

    @Override
    public String toString() {
        return "LayoverMetrics.none()";
    }
}
