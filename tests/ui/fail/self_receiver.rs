struct Shop;

impl Shop {
    #[mcp::tool]
    fn stock(&self) -> String {
        String::new()
    }
}

fn main() {}
