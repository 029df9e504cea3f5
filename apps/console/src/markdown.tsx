import Markdown from 'react-markdown'

// Model and user text as Markdown, never as HTML: raw HTML in the text is shown as the text it is
// (a remark step turns its nodes into text nodes before anything renders them), and links only
// open http(s) and mailto addresses.
const SAFE_LINK = /^(https?:|mailto:)/i

interface MdNode {
  type: string
  children?: MdNode[]
}

/** Every raw-HTML node of the Markdown tree becomes a text node with the same characters. */
function htmlAsText() {
  const walk = (node: MdNode) => {
    if (node.type === 'html') node.type = 'text'
    node.children?.forEach(walk)
  }
  return (tree: MdNode) => walk(tree)
}

export function Text({ children }: { children: string }) {
  return (
    <div className="markdown">
      <Markdown remarkPlugins={[htmlAsText]} urlTransform={(url) => (SAFE_LINK.test(url) ? url : '')}>
        {children}
      </Markdown>
    </div>
  )
}
