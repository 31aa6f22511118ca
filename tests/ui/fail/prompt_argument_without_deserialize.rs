struct Tone;

#[mcp::prompt]
fn greet(name: String, tone: Tone) -> String {
    let _ = tone;
    format!("Hello, {name}")
}

fn main() {}
