// JavaGet.java - a Java client of the identity tests, run from source by
// Debian's OpenJDK inside the sandbox. The JVM's default socket is AF_INET6
// even for an IPv4 proxy (v4-mapped). Prints the HTTP status (0: no answer).
// usage: java JavaGet.java PROXY_HOST PROXY_PORT URL
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.URL;

public class JavaGet {
	public static void main(String[] a) throws Exception {
		Proxy p = new Proxy(Proxy.Type.HTTP, new InetSocketAddress(a[0], Integer.parseInt(a[1])));
		HttpURLConnection c = (HttpURLConnection) new URL(a[2]).openConnection(p);
		c.setConnectTimeout(10000);
		c.setReadTimeout(10000);
		int code;
		try {
			code = c.getResponseCode();
		} catch (java.io.IOException e) {
			code = 0;
		}
		System.out.println("{\"status\": " + code + "}");
	}
}
