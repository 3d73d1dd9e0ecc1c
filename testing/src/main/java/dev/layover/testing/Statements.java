package dev.layover.testing;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * The statements a module keeps in its {@code *Sql} classes, prepared against a migrated database
 * (the server parses and analyses each, and describes its parameters) so that a misspelt column,
 * table or function fails a test rather than a run. A constant holding a fragment to be formatted
 * into another statement ({@code %s}) is not a statement and is left out.
 */
public final class Statements {

    private static final Pattern SQL = Pattern.compile(
            "^(\\s*--[^\\n]*\\n)*\\s*(SELECT|INSERT|UPDATE|DELETE|WITH|VALUES)\\b", Pattern.CASE_INSENSITIVE);
    private static final Pattern FRAGMENT = Pattern.compile("%(\\d+\\$)?s");

    private Statements() {}

    /**
     * @param holders classes whose static {@code String} constants hold statements (private ones too)
     * @return each constant that reads as a whole statement, by {@code Class.FIELD}, in name order
     */
    public static Map<String, String> constants(Class<?>... holders) {
        Map<String, String> out = new TreeMap<>();
        for (Class<?> h : holders) {
            for (Field f : h.getDeclaredFields()) {
                if (!Modifier.isStatic(f.getModifiers()) || f.getType() != String.class) {
                    continue;
                }
                try {
                    f.setAccessible(true);
                    String text = (String) f.get(null);
                    if (text != null && SQL.matcher(text).find() && !FRAGMENT.matcher(text).find()) {
                        out.put(h.getSimpleName() + "." + f.getName(), text);
                    }
                } catch (ReflectiveOperationException | RuntimeException e) {
                    throw new IllegalStateException("reading " + h.getName() + "." + f.getName(), e);
                }
            }
        }
        return out;
    }

    /**
     * Prepares each statement on {@code c} (parse, analysis and a describe of its parameters on the
     * server, nothing executed).
     *
     * @param c a connection to a migrated database
     * @param statements statements by name
     * @return one line per statement the server refused: its name and the server's message
     */
    public static List<String> refused(Connection c, Map<String, String> statements) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, String> e : statements.entrySet()) {
            try (PreparedStatement ps = c.prepareStatement(e.getValue())) {
                ps.getParameterMetaData();
            } catch (SQLException ex) {
                out.add(e.getKey() + " [" + ex.getSQLState() + "]: " + ex.getMessage());
            }
        }
        return out;
    }
}
