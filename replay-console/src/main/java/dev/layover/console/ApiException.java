package dev.layover.console;

/**
 * A request the console answers with an error status and a message (and, for invalid input, the
 * field it is about). Thrown by handlers; turned into {@code {"error": ..., "field": ...}}.
 */
final class ApiException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final int status;
    private final String field;

    ApiException(int status, String message) {
        this(status, message, null);
    }

    ApiException(int status, String message, String field) {
        super(message);
        this.status = status;
        this.field = field;
    }

    static ApiException badRequest(String message) {
        return new ApiException(400, message);
    }

    static ApiException badRequest(String message, String field) {
        return new ApiException(400, message, field);
    }

    static ApiException notFound(String message) {
        return new ApiException(404, message);
    }

    static ApiException forbidden(String message) {
        return new ApiException(403, message);
    }

    int status() {
        return status;
    }

    String field() {
        return field;
    }
}
