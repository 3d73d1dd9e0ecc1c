package dev.layover.spring.boot.console;

import dev.layover.console.ConsoleOptions;
import dev.layover.spring.boot.LayoverProperties;

/** The console's options from {@code layover.console.*}. */
final class ConsoleOptionsFactory {

    private ConsoleOptionsFactory() {}

    static ConsoleOptions standalone(LayoverProperties.Console p) {
        ConsoleOptions o = ConsoleOptions.defaults().withBind(p.getBind()).withPort(p.getPort())
                .withReadOnly(Boolean.TRUE.equals(p.getReadOnly()));
        if (p.getToken() != null && !p.getToken().isBlank()) {
            o = o.withToken(p.getToken());
        }
        if (p.getPublicUrl() != null && !p.getPublicUrl().isBlank()) {
            o = o.withPublicUrl(p.getPublicUrl());
        }
        return o;
    }
}
