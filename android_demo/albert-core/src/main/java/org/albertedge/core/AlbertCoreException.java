package org.albertedge.core;

/**
 * One exception type for every failure a user (or a bad model file) can cause in albert-core.
 *
 * <p>Mirrors Python's {@code AlbertEdgeError}: the message is one line that names the file or
 * argument and says what was expected, so the app can show it as-is.
 */
public class AlbertCoreException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public AlbertCoreException(String message) {
        super(message);
    }
}
