import { render } from "preact";
import "uplot/dist/uPlot.min.css";
import "./styles.css";

function App() {
  return <h1>MortarMQ Edge</h1>;
}
render(<App />, document.getElementById("app")!);
